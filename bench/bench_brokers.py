"""Broker benchmarks (issue 13), on the real RabbitMQ, side by side with its own shovel.

1. Drain: N dead letters (default 100k, 200-byte bodies, each with its `x-death` record) from a
   RabbitMQ dead-letter queue into the lake, by the consumer the `sources` process runs
   (`source_consume`), from its start until every message is stored and acknowledged (the DLQ is
   empty).
2. Redrive: the same N, quarantined by the intake handler (not timed), sent back by an approved
   "reprocess to its original RabbitMQ queue": from "approve" until the N messages are confirmed
   in their original queue (the decision's execution, then delivery runs of the redrive queue,
   whose handler publishes with pipelined publisher confirms).
3. The floor of a redrive: N quarantined messages (seeded as bench_decisions seeds them, 200-byte
   bodies) reprocessed by an approved request to a queue whose handler does nothing
   (workers.demo.handlers.noop), timed as the redrive is, from "approve" until every one is
   delivered. What the decision and the engine cost without any publishing: a redrive cannot be
   faster than this.
4. RabbitMQ's shovel moving the same N (200-byte persistent messages) between two durable queues
   with `ack-mode: on-confirm`, in the same run (bench_decisions' `_shovel`).

Goal: drain and redrive each at least as fast as the shovel. Runs on SQLite and then on
PostgreSQL (bench.support.on_both_databases). BENCH_BROKER_MESSAGES overrides N.
"""

import os
import threading
import time
import uuid

from bench.bench_decisions import _people, _rabbitmq_up, _seed, _shovel, _window
from bench.support import django_setup, fresh_state, on_both_databases, rows_print

URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
URL_ENV = "BENCH_AMQP_URL"
BODY_SIZE = 200


def _dead_letters(channel, work, dlq, n):
    """n persistent messages published to `work` and rejected by its consumer: RabbitMQ
    dead-letters each to `dlq` with its x-death record."""
    import pika

    body = b"x" * BODY_SIZE
    for i in range(n):
        channel.basic_publish(
            "",
            work,
            body,
            pika.BasicProperties(
                delivery_mode=2, message_id=f"b{i:08d}", content_type="text/plain"
            ),
        )
    channel.basic_qos(prefetch_count=5000)
    for rejected, (method, _, _) in enumerate(channel.consume(work, inactivity_timeout=5), 1):
        if method is None:
            break
        if rejected % 1000 == 0 or rejected == n:
            channel.basic_nack(method.delivery_tag, multiple=True, requeue=False)
        if rejected == n:
            break
    channel.cancel()
    while channel.queue_declare(dlq, passive=True).method.message_count < n:
        time.sleep(0.2)


def _depth(channel, queue):
    return channel.queue_declare(queue, passive=True).method.message_count


def _drain(channel, dlq, n):
    from console.ingest.consumers import source_consume
    from console.ingest.models import MessageKey
    from console.queues.models import BrokerSource

    source = BrokerSource.objects.get(name="bench-dlq")
    stop = threading.Event()
    thread = threading.Thread(target=source_consume, args=(source,), kwargs={"stop": stop})
    started = time.perf_counter()
    thread.start()
    while _depth(channel, dlq) > 0 or MessageKey.objects.filter(queue="bench-dead").count() < n:
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    stop.set()
    thread.join()
    stored = MessageKey.objects.filter(queue="bench-dead").count()
    assert stored == n, stored
    return seconds


def _deliver(spark, queue, n):
    """Delivery runs of `queue` until n of its messages were delivered (or nothing is due)."""
    from console.delivery.services import delivery_run

    delivered = 0
    while delivered < n:
        run = delivery_run(queues=[queue], spark=spark)
        if run is None or not run.claimed:
            return
        delivered += (run.outcomes or {}).get("states", {}).get("DLVD", 0)


def _deliver_until_idle(spark, queues):
    from console.delivery.services import delivery_run

    while True:
        run = delivery_run(queues=queues, spark=spark)
        if run is None or not run.claimed:
            return


def _reprocess(people, spark, filters, target, n):
    """Approve and carry out "reprocess to `target`" of the n quarantined messages `filters`
    select, then deliver `target` until nothing is due. Returns the seconds of the decision and
    of the whole, from "approve"."""
    from console.decisions.execution import action_request_execute
    from console.decisions.services import Action, action_request_approve, action_request_create

    request = action_request_create(
        actor=people["operator"],
        scope={"kind": "filter", "filters": filters},
        action=Action(kind="reprocess", target_queue=target),
        comment=f"bench: reprocess to {target}",
    )
    assert request.count == n, request.count
    started = time.perf_counter()
    action_request_approve(actor=people["approver"], request=request)
    request = action_request_execute(request_id=request.id, spark=spark)
    assert request.status == "done", request.status
    decided = time.perf_counter() - started
    _deliver(spark, target, n)
    return decided, started


def _redrive(people, spark, channel, work, n):
    decided, started = _reprocess(people, spark, {"queue": "bench-dead"}, "bench-redrive", n)
    while _depth(channel, work) < n:
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    assert _depth(channel, work) == n, _depth(channel, work)
    return seconds, decided


def _floor(people, spark, n):
    """The redrive's decision and delivery with a handler that does nothing, over n quarantined
    messages seeded beside the drained ones (not timed), indexed by a full refresh."""
    from django.db import connection

    from console.lake.services import lake
    from console.readmodels.models import QueueStat
    from console.readmodels.services import read_models_refresh

    _seed(lake(), n)
    read_models_refresh(full=True, spark=spark)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # as autovacuum would have (bench_decisions)
            cursor.execute("VACUUM ANALYZE")
    decided, started = _reprocess(people, spark, _window(0, n), "bench-floor", n)
    seconds = time.perf_counter() - started
    read_models_refresh(spark=spark)
    delivered = QueueStat.objects.get(queue="bench-floor").counts.get("DLVD", 0)
    assert delivered == n, delivered
    return seconds, decided


def run():
    return on_both_databases(run_here, "bench.bench_brokers")


def run_here():
    django_setup()
    import pika
    from django.conf import settings
    from django.db import connection

    from console.queues.services import queues_load
    from console.queues.sources import INTAKE_HANDLER, REDRIVE_HANDLER
    from console.readmodels.services import read_models_refresh
    from console.spark import spark_from_settings

    settings.REFRESH_ON_COMMIT = False
    n = int(os.environ.get("BENCH_BROKER_MESSAGES", 100_000))
    cores = os.cpu_count()
    db = connection.vendor
    os.environ[URL_ENV] = URL
    _rabbitmq_up()
    fresh_state("brokers")
    tag = uuid.uuid4().hex[:6]
    work, dlq = f"bench.brokers.{tag}", f"bench.brokers.{tag}.dlq"
    connection_ = pika.BlockingConnection(pika.URLParameters(URL + "?heartbeat=0"))
    channel = connection_.channel()
    channel.queue_declare(dlq, durable=True)
    channel.queue_declare(
        work,
        durable=True,
        arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq},
    )
    try:
        _dead_letters(channel, work, dlq, n)
        queues_load(
            data={
                "queues": [
                    {"name": "bench-dead", "handler": INTAKE_HANDLER},
                    {
                        "name": "bench-redrive",
                        "handler": REDRIVE_HANDLER,
                        "handler_options": {"url_env": URL_ENV},
                    },
                    {"name": "bench-floor", "handler": "workers.demo.handlers.noop"},
                ],
                "sources": [
                    {
                        "name": "bench-dlq",
                        "url_env": URL_ENV,
                        "broker_queue": dlq,
                        "queue": "bench-dead",
                        "redrive_queue": "bench-redrive",
                        "prefetch": 5000,
                        "batch_size": 5000,
                    }
                ],
            }
        )
        drain = _drain(channel, dlq, n)

        spark = spark_from_settings()
        started = time.perf_counter()
        _deliver_until_idle(spark, ["bench-dead"])
        quarantine = time.perf_counter() - started
        read_models_refresh(full=True, spark=spark)
        people = _people()
        redrive, decided = _redrive(people, spark, channel, work, n)
        floor, floor_decided = _floor(people, spark, n)
    finally:
        for queue in (work, dlq, dlq + ".antidote-refused"):
            channel.queue_delete(queue)
        connection_.close()
    shovel = _shovel(n, body_size=BODY_SIZE)
    return [
        {
            "benchmark": f"drain {n:,} dead letters from RabbitMQ ({db})",
            "messages": n,
            "seconds": round(drain, 1),
            "msgs_per_s": round(n / drain),
            "shovel_s": round(shovel, 1),
            "shovel_msgs_per_s": round(n / shovel),
            "vs_shovel": round(shovel / drain, 2),
            "goal": ">= 1 x the shovel",
            "cores": cores,
        },
        {
            "benchmark": f"redrive {n:,} to their RabbitMQ queue ({db})",
            "messages": n,
            "seconds": round(redrive, 1),
            "of_which_decision_s": round(decided, 1),
            # The same delivery run with a handler that does nothing but fail (the intake's):
            # what the engine takes for N messages, publishing aside.
            "engine_only_s": round(quarantine, 1),
            "msgs_per_s": round(n / redrive),
            "shovel_s": round(shovel, 1),
            "shovel_msgs_per_s": round(n / shovel),
            "vs_shovel": round(shovel / redrive, 2),
            "goal": ">= 1 x the shovel",
            "cores": cores,
        },
        {
            "benchmark": f"redrive floor: {n:,} reprocessed to a no-op handler ({db})",
            "messages": n,
            "seconds": round(floor, 1),
            "of_which_decision_s": round(floor_decided, 1),
            "msgs_per_s": round(n / floor),
            "shovel_s": round(shovel, 1),
            "shovel_msgs_per_s": round(n / shovel),
            "vs_shovel": round(shovel / floor, 2),
            "goal": "(none: the most a redrive can reach)",
            "cores": cores,
        },
    ]


if __name__ == "__main__":
    rows_print(run_here())
