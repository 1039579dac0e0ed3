"""The running product (a Celery spark worker in threads, a default worker and beat, as `make run`
starts them, on the product's default intervals) with little to do (issue 11):

1. A trickle: one message ingested every 0.1 to 2 s (seeded random gaps, not waiting for the
   deliveries, so that ingests land at every point of a run's life: before it reads the lake,
   while it delivers, as it lets go); each one's seconds from its ingest to the start of the run
   that claims it (the time its DLNG event carries: the run's clock, read as it starts, before
   its Spark job) and to its DLVD event (its handler called and the outcome committed). p50, p95
   and the maximum: a wake-up lost would leave a message to beat's next tick (up to 15 s).
2. Idle: once everything is delivered and the read models are current, the delivery runs (each
   one a Spark job) and refreshes started over four of beat's delivery intervals. Goal: none.

Runs on SQLite and then, when PostgreSQL answers, on PostgreSQL (bench.support).
BENCH_MESSAGES sets the trickle's length (default 100, at most 1000)."""

import os
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.support import (
    ROOT,
    CpuMeter,
    delivered_at,
    django_setup,
    fresh_state,
    messages_from_env,
    on_both_databases,
    processes_stop,
    product_processes,
    product_servers,
    rows_print,
)

SPACING = (0.1, 2.0)  # seconds between two ingests of the trickle, drawn uniformly
SEED = 47  # the same gaps every time: a race found once is found again
INTERVALS_IDLE = 4


def _taken_at(message_id):
    from console.browse.selectors import message_detail

    detail = message_detail(message_id=message_id)
    taken = [e["at"] for e in (detail or {}).get("history", []) if e["to_state"] == "DLNG"]
    return taken[0] if taken else None


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.2)
    return found


def _percentiles(values):
    ordered = sorted(values)
    return (
        round(statistics.median(ordered), 2),
        round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 2),
        round(ordered[-1], 2),
    )


def run_here():
    django_setup()
    from django.conf import settings
    from django.db import connection

    from console.delivery.models import DeliveryRun
    from console.ingest.services import messages_ingest
    from console.lake.models import LakeCommit
    from console.queues.models import Queue
    from console.readmodels.models import RefreshRun
    from console.readmodels.selectors import read_models_folded_upto as _cursor

    count = min(messages_from_env(100), 1000)
    db = connection.vendor
    lake = fresh_state("trickle")
    RefreshRun.objects.all().delete()
    Queue.objects.create(name="trickle", handler="workers.demo.handlers.noop")
    folder = Path(tempfile.mkdtemp(prefix="bench-trickle-"))
    env = {
        **os.environ,
        "VAR_DIR": str(settings.VAR_DIR),
        "LAKE_URI": str(lake),
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "INBOX_POLL_SECONDS": "3600",
    }
    if connection.settings_dict["ENGINE"].endswith("sqlite3"):
        env["DATABASE_URL"] = f"sqlite:///{connection.settings_dict['NAME']}"
    interval = settings.DELIVERY_INTERVAL_SECONDS
    started = product_processes(env, folder)
    taken, delivered = [], []
    try:

        def send(message_id):
            result = messages_ingest(
                records=[{"id": message_id, "queue": "trickle", "body": "{}"}], source="bench"
            )
            assert result.accepted == 1, result.errors
            return datetime.now(UTC)

        # Warm up: the spark worker's JVM and its first jobs.
        for i in range(2):
            send(f"warm-{i}")
            _wait(lambda i=i: delivered_at(f"warm-{i}"), 600, "the warm-up message")
        # CPU of every process involved over the trickle, its pauses included (CpuMeter).
        meter = CpuMeter(servers=product_servers(broker=True)).start()
        gaps = random.Random(SEED)
        sent = {}
        for i in range(count):
            message_id = f"t-{i:03d}"
            sent[message_id] = send(message_id)
            time.sleep(gaps.uniform(*SPACING))
        for message_id, at in sent.items():
            done = _wait(lambda m=message_id: delivered_at(m), 600, f"{message_id} delivered")
            taken.append((_taken_at(message_id) - at).total_seconds())
            delivered.append((done - at).total_seconds())
        meter.stop()

        def quiet():
            newest = LakeCommit.objects.filter(dataset="events").order_by("-id").first()
            running = DeliveryRun.objects.filter(status=DeliveryRun.RUNNING).exists()
            return not running and newest is not None and _cursor() == newest.id

        _wait(quiet, 600, "the read models to fold every commit")
        runs_before = DeliveryRun.objects.count()
        refreshes_before = RefreshRun.objects.count()
        time.sleep(INTERVALS_IDLE * interval)
        idle_runs = DeliveryRun.objects.count() - runs_before
        idle_refreshes = RefreshRun.objects.count() - refreshes_before
    finally:
        processes_stop(started)
    taken_p50, taken_p95, taken_max = _percentiles(taken)
    done_p50, done_p95, done_max = _percentiles(delivered)
    cores = os.cpu_count()
    return [
        {
            "benchmark": f"trickle, ingest -> the run that takes it starts ({db})",
            "messages": count,
            "p50 s": taken_p50,
            "p95 s": taken_p95,
            "max s": taken_max,
            "goal": "p95 <= 0.5 s, max <= 2 s",
            "cores": cores,
        },
        {
            "benchmark": f"trickle, ingest -> DLVD ({db})",
            "messages": count,
            **meter.per_message(count),
            "p50 s": done_p50,
            "p95 s": done_p95,
            "max s": done_max,
            "goal": "p95 <= 0.5 s, max <= 2 s",
            "cores": cores,
        },
        {
            "benchmark": f"idle for {INTERVALS_IDLE} delivery intervals of {interval} s ({db})",
            "delivery runs (Spark jobs)": idle_runs,
            "refreshes": idle_refreshes,
            "goal": "no Spark job",
            "cores": cores,
        },
    ]


def run():
    return on_both_databases(run_here, "bench.bench_trickle")


if __name__ == "__main__":
    rows_print(run_here())
