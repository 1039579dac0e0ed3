"""Decision benchmarks (issue 4).

1. Bulk reprocess of N quarantined messages (default 1M), from "approve" until every one is TBDL
   and the console's read models show it: messages a second, against
   - the floor: a plain Spark read-filter-write of the same rows (the ledger's current state,
     filtered to the frozen set's range, written back as Parquet) in the same run;
   - RabbitMQ's shovel moving the same number of messages between two queues (the bench starts
     RabbitMQ and enables the shovel plugin if needed).
2. Peak memory of the process that runs the execution (this one, with its JVM and Spark's Python
   workers: the spark worker's process tree) for 100k and for N.
3. From "approve" to the message back in TBDL, for a one-message request.
Each timed part with its CPU µs a message (bench.support.CpuMeter: this process, its JVM and
Spark's Python workers, and the database server on PostgreSQL).

The lake is seeded with pyarrow as bench_refresh does (1.1M+: a 100k set and an N set), with
the ingest keys and poison-list entries the product holds for quarantined messages, then indexed
by a full refresh (and vacuumed on PostgreSQL, as autovacuum would have). The execution runs in
this process on the same Spark session, as the spark worker would run it; the broker's hand-over
is not timed (see docs/benchmarks.md).

Runs on SQLite (the embedded default) and then, when PostgreSQL answers on 127.0.0.1:5432 and
DATABASE_URL is not set, again on PostgreSQL (bench.support.on_both_databases). BENCH_MESSAGES
overrides N.
"""

import os
import shutil
import subprocess
import time
from datetime import timedelta

import pyarrow.compute as pc

from bench.bench_refresh import T0, _chunk_tables, lake_seed
from bench.support import (
    CpuMeter,
    PeakMemory,
    bench_start,
    on_both_databases,
    port_answers,
    rows_print,
)

SMALL = 100_000
SHOVEL_SRC, SHOVEL_DST = "bench.shovel.src", "bench.shovel.dst"


def _seed(store, n):
    """The lake, and what the product holds beside it for quarantined messages: every accepted
    message's ingest key, and every quarantined one's poison-list entry with its body hash (R9).
    A reprocess takes them off the list, by id and by the body hashes it reads there."""
    from django.db import transaction
    from django.utils import timezone

    from console.delivery.poison import poison_entries_put
    from console.ingest.services import _message_keys_insert

    def beside(messages, events, commit):
        with transaction.atomic():
            _message_keys_insert(messages, commit_id=commit, now=timezone.now())
        quarantined = events.filter(pc.field("to_state") == "NDLV")
        listed = messages.join(quarantined.select(["message_id", "reason"]), keys="message_id")
        poison_entries_put(
            entries=zip(
                *(listed.column(c).to_pylist() for c in ("message_id", "queue", "reason")),
                listed.column("body_sha256").to_pylist(),
                strict=True,
            ),
            source="engine",
        )

    lake_seed(store, n, _chunk_tables, purpose="bench decisions: quarantine", each=beside)


def _people():
    """An operator and an approver; the approver's cool-down (issue 12) is waived, as the demo's
    accounts' is: a fresh account may not approve for a day."""
    from django.contrib.auth.models import Group, User

    from console.access.rights import approver_cooldown_waive
    from console.accounts.roles import roles_seed

    roles_seed()
    people = {}
    for role in ("operator", "approver"):
        user, _ = User.objects.get_or_create(username=f"bench-{role}")
        user.groups.add(Group.objects.get(name=role))
        approver_cooldown_waive(user, reason="benchmark account")
        people[role] = User.objects.get(id=user.id)  # fresh permission cache and dates
    return people


def _window(first, count):
    """The browser filter of the messages m<first> .. m<first+count-1>: bench_refresh's failures
    happen one second apart, in id order."""
    since = T0 + timedelta(seconds=first, minutes=5)
    until = since + timedelta(seconds=count)
    return {"since": since.isoformat(), "until": until.isoformat()}


def _bulk(people, spark, *, first, count):
    from console.decisions.execution import action_request_execute
    from console.decisions.services import Action, action_request_approve, action_request_create
    from console.readmodels.execution import read_models_refresh

    started = time.perf_counter()
    request = action_request_create(
        actor=people["operator"],
        scope={"kind": "filter", "filters": _window(first, count)},
        action=Action(kind="reprocess"),
        comment="bench: the handler is fixed",
    )
    frozen = time.perf_counter() - started
    assert request.count == count, request.count
    with PeakMemory() as memory, CpuMeter() as meter:
        action_request_approve(actor=people["approver"], request=request)
        request = action_request_execute(request_id=request.id, spark=spark)
    assert (request.status, request.done) == ("done", count), (request.status, request.done)
    # The views are up to date: the decisions updated them, there is nothing left to fold. The
    # refresh after it takes their commits in to count their flows out of quarantine (the only
    # thing the decision leaves to it), and changes no message.
    refresh = read_models_refresh(spark=spark)
    assert refresh is None or refresh.changed == 0, refresh.changed
    return request, frozen, meter, memory.peak_mib


def _floor(spark, *, first, count):
    """Read the ledger's current state, keep the same rows, write them: what any Spark job
    touching those messages pays at least."""
    from pyspark.sql import functions as F

    from console.lake.selectors import lake_state_inputs
    from console.lake.services import lake
    from workers.jobs.state import extract_state

    store = lake()
    inputs = lake_state_inputs()
    out = store.path(store.new_dir("bench-floor"))
    with CpuMeter() as meter:
        state = extract_state(
            spark, store.paths(inputs.snapshot_paths), store.paths(inputs.event_paths)
        )
        lo, hi = f"m{first:09d}", f"m{first + count - 1:09d}"
        selected = F.col("message_id").between(lo, hi) & (F.col("to_state") == "NDLV")
        state.where(selected).write.parquet(out)
    written = spark.read.parquet(out).count()
    shutil.rmtree(out, ignore_errors=True)
    assert written == count, written
    return meter


def _one(people, spark, message_id):
    from django.conf import settings

    from console.decisions.execution import action_request_execute
    from console.decisions.services import Action, action_request_approve, action_request_create
    from console.readmodels.models import MessageIndex

    settings.APPROVAL_OVER = 0  # so that one message needs an approval to time
    request = action_request_create(
        actor=people["operator"],
        scope={"kind": "message", "id": message_id},
        action=Action(kind="reprocess"),
        comment="bench: one message",
    )
    with CpuMeter() as meter:
        action_request_approve(actor=people["approver"], request=request)
        action_request_execute(request_id=request.id, spark=spark)
    settings.APPROVAL_OVER = 1
    assert MessageIndex.objects.get(message_id=message_id).state == "TBDL"
    return meter


# --- RabbitMQ's shovel -------------------------------------------------------------------------


def _rabbitmq_up():
    if not port_answers(5672, timeout=1):
        subprocess.run(["rabbitmq-server", "-detached"], check=False)
        deadline = time.monotonic() + 120
        while not port_answers(5672, timeout=1):
            if time.monotonic() > deadline:
                raise RuntimeError("RabbitMQ did not start within 120 s")
            time.sleep(1)
    subprocess.run(
        ["rabbitmq-plugins", "enable", "rabbitmq_shovel"], check=True, capture_output=True
    )


def _shovel(count, body_size=200):
    """Publish `count` persistent messages to one durable queue, then time a dynamic shovel
    moving them all to another."""
    import pika

    _rabbitmq_up()
    connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1"))
    channel = connection.channel()
    for queue in (SHOVEL_SRC, SHOVEL_DST):
        channel.queue_delete(queue=queue)
        channel.queue_declare(queue=queue, durable=True)
    body = b"x" * body_size
    persistent = pika.BasicProperties(delivery_mode=2)
    for _ in range(count):
        channel.basic_publish("", SHOVEL_SRC, body, persistent)
    while channel.queue_declare(queue=SHOVEL_SRC, passive=True).method.message_count < count:
        time.sleep(0.2)
    definition = (
        '{"src-protocol": "amqp091", "src-uri": "amqp://guest:guest@127.0.0.1", '
        f'"src-queue": "{SHOVEL_SRC}", "src-delete-after": "queue-length", '
        '"dest-protocol": "amqp091", "dest-uri": "amqp://guest:guest@127.0.0.1", '
        f'"dest-queue": "{SHOVEL_DST}", "ack-mode": "on-confirm"}}'
    )
    started = time.perf_counter()
    subprocess.run(
        ["rabbitmqctl", "set_parameter", "shovel", "bench-move", definition],
        check=True,
        capture_output=True,
    )
    while channel.queue_declare(queue=SHOVEL_DST, passive=True).method.message_count < count:
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    subprocess.run(
        ["rabbitmqctl", "clear_parameter", "shovel", "bench-move"], check=False, capture_output=True
    )
    for queue in (SHOVEL_SRC, SHOVEL_DST):
        channel.queue_delete(queue=queue)
    connection.close()
    return seconds


def run():
    return on_both_databases(run_here, "bench.bench_decisions")


def run_here():
    """The benchmark on the database of this process's settings."""
    n = bench_start("decisions", messages=1_000_000)
    from django.db import connection

    from console.decisions.models import ActionRequest
    from console.lake.execution import lake_state_compact_if_due
    from console.lake.services import lake
    from console.readmodels.execution import read_models_refresh
    from console.spark import spark_from_settings

    small = min(SMALL, n)
    cores = os.cpu_count()
    ActionRequest.objects.all().delete()
    store = lake()
    started = time.perf_counter()
    _seed(store, small + n + 1)
    spark = spark_from_settings()
    lake_state_compact_if_due(force=True, spark=spark)
    read_models_refresh(full=True, spark=spark)
    if connection.vendor == "postgresql":
        # What autovacuum does to a million fresh rows long before anyone reprocesses them
        # (statistics, hint bits, visibility map): a server with it off (this development
        # machine's) would otherwise pay it inside the timed decision.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    seed_seconds = time.perf_counter() - started
    people = _people()
    db = connection.vendor
    rows = []

    _, frozen, meter, peak = _bulk(people, spark, first=0, count=small)
    rows.append(
        {
            "benchmark": f"bulk reprocess {small:,} ({db})",
            "messages": small,
            "freeze_s": round(frozen, 1),
            "approve_to_views_s": round(meter.seconds, 1),
            **meter.per_message(small),
            "msgs_per_s": round(small / meter.seconds),
            "peak_mib": peak,
            "cores": cores,
        }
    )
    floor = _floor(spark, first=small, count=n)
    _, frozen, meter, peak_n = _bulk(people, spark, first=small, count=n)
    seconds = meter.seconds
    shovel = _shovel(n)
    rows.append(
        {
            "benchmark": f"bulk reprocess {n:,} ({db})",
            "messages": n,
            "freeze_s": round(frozen, 1),
            "approve_to_views_s": round(seconds, 1),
            **meter.per_message(n),
            "msgs_per_s": round(n / seconds),
            "floor_s": round(floor.seconds, 1),
            "floor_cpu_us_per_msg": round(floor.us_per_message(n), 1),
            "floor_msgs_per_s": round(n / floor.seconds),
            "share_of_floor": round(floor.seconds / seconds, 3),
            "shovel_s": round(shovel, 1),
            "shovel_msgs_per_s": round(n / shovel),
            "faster_than_shovel": round(shovel / seconds, 2),
            "peak_mib": peak_n,
            "peak_vs_100k": round(peak_n / peak, 2),
            "goal": ">= 30k/s, >= 40 % of floor, >= 3 x the shovel, same memory",
            "cores": cores,
        }
    )
    one = _one(people, spark, f"m{small + n:09d}")
    rows.append(
        {
            "benchmark": f"approve -> TBDL, one message ({db})",
            "messages": 1,
            "approve_to_views_s": round(one.seconds, 3),
            **one.per_message(1),
            "cores": cores,
        }
    )
    rows.append({"benchmark": "seed + full refresh (setup)", "seconds": round(seed_seconds, 1)})
    return rows


if __name__ == "__main__":
    rows_print(run_here())
