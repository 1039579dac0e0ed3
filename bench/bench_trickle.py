"""The running product (a Celery spark worker in threads, a default worker and beat, as `make run`
starts them, on the product's default intervals) with little to do (issue 11):

1. A trickle: one message ingested every few seconds; each one's seconds from its ingest to the
   start of the run that claims it (the time its DLNG event carries: the run's clock, read as it
   starts, before its Spark job) and to its DLVD event (its handler called and the outcome
   committed). p50 and p95.
2. Idle: once everything is delivered and the read models are current, the delivery runs (each
   one a Spark job) and refreshes started over four of beat's delivery intervals. Goal: none.

Runs on SQLite and then, when PostgreSQL answers, on PostgreSQL (bench.support).
BENCH_MESSAGES sets the trickle's length (default 10, at most 60)."""

import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.support import (
    ROOT,
    delivered_at,
    django_setup,
    fresh_state,
    messages_from_env,
    on_both_databases,
    processes_stop,
    product_processes,
    rows_print,
)

SPACING = 3.0  # seconds between two messages of the trickle
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

    count = min(messages_from_env(10), 60)
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
        for i in range(count):
            message_id = f"t-{i:03d}"
            sent = send(message_id)
            done = _wait(lambda m=message_id: delivered_at(m), 600, f"{message_id} delivered")
            taken.append((_taken_at(message_id) - sent).total_seconds())
            delivered.append((done - sent).total_seconds())
            time.sleep(SPACING)

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
    taken_p50, taken_p95 = _percentiles(taken)
    done_p50, done_p95 = _percentiles(delivered)
    cores = os.cpu_count()
    return [
        {
            "benchmark": f"trickle, ingest -> the run that takes it starts ({db})",
            "messages": count,
            "p50 s": taken_p50,
            "p95 s": taken_p95,
            "cores": cores,
        },
        {
            "benchmark": f"trickle, ingest -> DLVD ({db})",
            "messages": count,
            "p50 s": done_p50,
            "p95 s": done_p95,
            "goal": "first handler call: p50 <= 1 s, p95 <= 3 s",
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
