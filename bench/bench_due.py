"""What the lake's size costs a small delivery run (issue 11: "runs read what is due").

A delivery run of 100 due messages (ingested, TBDL) on a lake that also holds N delivered (final)
messages, default 1M, against the same run on a lake with nothing else, side by side in one
process on one warm Spark session. Each figure is the median of three runs, each over 100 newly
ingested messages; the state snapshot is compacted once after the lake is seeded, as the product's
compaction leaves it. Two ways: every run a Spark job (DELIVERY_LOCAL_MAX=0), and a small run
delivered without Spark (DELIVERY_LOCAL_MAX's default), when the code has that. Beside each, the
CPU µs a message of the three runs (bench.support.CpuMeter: this process, its JVM and Spark's
Python workers, the handlers' children, and the database server on PostgreSQL).

The lake is written directly with pyarrow under the commit protocol (ingest's TBDL, then a
delivery that took each message to DLVD, in chunks), as bench_refresh does. Runs on the
DATABASE_URL database (SQLite by default). BENCH_MESSAGES sets N.
Run as a module (`python -m bench.bench_due`) it prints its rows for a parent (rows_print).
"""

import os
import statistics
import time
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from bench.support import (
    CPU_PER_MESSAGE,
    CpuMeter,
    cpu_per_message,
    django_setup,
    fresh_state,
    lake_table,
    messages_from_env,
    rows_print,
)

CHUNK = 100_000
DUE = 100
RUNS = 3
QUEUE = "bench.due"
T0 = datetime(2026, 3, 1, tzinfo=UTC)
TS = pa.timestamp("us", tz="UTC")


def _messages(ids, start):
    n = len(ids)
    body = b'{"order": "x"}' + b" " * 180
    enqueued = [T0 + timedelta(seconds=start + k) for k in range(n)]
    return pa.table(
        {
            "message_id": ids,
            "version": pa.array([1] * n, pa.int32()),
            "queue": [QUEUE] * n,
            "body": pa.array([body] * n, pa.binary()),
            "body_sha256": [f"{start + k:064x}" for k in range(n)],
            "body_size": pa.array([len(body)] * n, pa.int64()),
            "content_type": ["application/json"] * n,
            "headers": ["{}"] * n,
            "conversation_id": [f"conv-{(start + k) // 4:08d}" for k in range(n)],
            "sender": ["shop@example.test"] * n,
            "enqueued_at": pa.array(enqueued, TS),
        }
    )


def _events(ids, steps, epoch, at):
    """For each message, the transitions `steps` [(from, to, attempt)], in that order."""
    from workers.lake.schema import EVENT_SCHEMA

    rows = [(mid, k, s) for k, mid in enumerate(ids) for s in range(len(steps))]
    m = len(rows)
    return pa.table(
        {
            "message_id": [mid for mid, _, _ in rows],
            "epoch": pa.array([0 if s == 0 else epoch for _, _, s in rows], pa.int64()),
            "step": pa.array([len(steps) * k + s for _, k, s in rows], pa.int64()),
            "at": pa.array([at] * m, TS),
            "from_state": [steps[s][0] for _, _, s in rows],
            "to_state": [steps[s][1] for _, _, s in rows],
            "queue": [QUEUE] * m,
            "attempt": pa.array([steps[s][2] for _, _, s in rows], pa.int32()),
            "delivery_count": pa.array([0] * m, pa.int32()),
            "candidate": pa.array([False] * m),
            "batch_limit": pa.array([0] * m, pa.int32()),
            "next_attempt_at": pa.nulls(m, TS),
            "body_version": pa.array([1] * m, pa.int32()),
            "actor": ["bench"] * m,
            "run_id": ["bench"] * m,
            "reason": pa.nulls(m, pa.string()),
            "exception_type": pa.nulls(m, pa.string()),
            "stack": pa.nulls(m, pa.string()),
            "queue_streak": pa.nulls(m, pa.int32()),
        },
        schema=EVENT_SCHEMA,
    )


def _commit(store, dataset, table, key, epoch=None):
    from django.db import transaction

    from console.lake.services import lake_commit_record

    path = store.write_arrow(lake_table(dataset, table), store.new_dir(dataset, "bench"))
    with transaction.atomic():
        lake_commit_record(
            dataset=dataset, path=path, row_count=table.num_rows, idempotency_key=key, epoch=epoch
        )


def _seed_delivered(store, n):
    """n messages ingested and delivered: their history is TBDL -> DLNG -> DLVD."""
    from console.lake.services import epoch_allocate

    epoch = epoch_allocate(purpose="bench due: delivered")
    steps = [(None, "TBDL", 0), ("TBDL", "DLNG", 1), ("DLNG", "DLVD", 1)]
    for start in range(0, n, CHUNK):
        ids = [f"m{i:09d}" for i in range(start, min(n, start + CHUNK))]
        _commit(store, "messages", _messages(ids, start), f"bench:m:{start}")
        _commit(store, "events", _events(ids, steps, epoch, T0), f"bench:e:{start}", epoch)


def _ingest_due(store, label):
    """DUE new messages, as ingest commits them: their bodies and their TBDL events."""
    ids = [f"d{label}-{k:05d}" for k in range(DUE)]
    _commit(store, "messages", _messages(ids, 0), f"bench:due:m:{label}")
    _commit(store, "events", _events(ids, [(None, "TBDL", 0)], 0, T0), f"bench:due:e:{label}", 0)


def _runs(spark, label, local_max):
    """Median seconds of RUNS delivery runs of DUE newly ingested messages each, and their CPU
    µs a message."""
    from django.conf import settings

    from console.delivery.execution import delivery_run
    from console.lake.services import lake

    settings.DELIVERY_LOCAL_MAX = local_max
    times, cpu = [], 0.0
    for k in range(RUNS):
        _ingest_due(lake(), f"{label}{local_max}-{k}")
        with CpuMeter() as meter:
            run = delivery_run(queues=[QUEUE], spark=spark)
        times.append(meter.seconds)
        cpu += meter.cpu_seconds
        assert run.outcomes["states"] == {"DLVD": DUE}, run.outcomes
    return round(statistics.median(times), 2), cpu_per_message(cpu, RUNS * DUE)[CPU_PER_MESSAGE]


def _lake(name, n):
    from django.conf import settings

    from console.lake.execution import lake_state_compact_if_due
    from console.lake.services import lake
    from console.queues.models import Queue
    from console.spark import spark_from_settings

    settings.REFRESH_ON_COMMIT = False
    fresh_state(name)
    Queue.objects.create(name=QUEUE, handler="workers.demo.handlers.noop")
    started = time.perf_counter()
    if n:
        _seed_delivered(lake(), n)
        lake_state_compact_if_due(force=True, spark=spark_from_settings())
    return time.perf_counter() - started


def run():
    django_setup()
    from django.conf import settings
    from django.db import connection

    from console.spark import spark_from_settings

    n = messages_from_env(1_000_000)
    cores = os.cpu_count()
    spark = spark_from_settings()
    ways = {"Spark job": 0}
    local_max = getattr(settings, "DELIVERY_LOCAL_MAX", 0)
    if local_max >= DUE:
        ways["without Spark"] = local_max

    _lake("due-empty", 0)
    alone, alone_cpu = {}, {}
    for way, limit in ways.items():
        _runs(spark, "warm", limit)  # the JVM, the Python workers, the handlers' children
        alone[way], alone_cpu[way] = _runs(spark, "empty", limit)
    seed_seconds = _lake("due-history", n)
    rows = []
    for way, limit in ways.items():
        loaded, cpu = _runs(spark, "history", limit)
        rows.append(
            {
                "benchmark": f"delivery run of {DUE} due messages, {way} ({connection.vendor})",
                "messages": n,
                "seconds": loaded,
                CPU_PER_MESSAGE: cpu,
                "empty_lake_seconds": alone[way],
                "empty_lake_cpu_us_per_msg": alone_cpu[way],
                "ratio": round(loaded / alone[way], 2),
                "goal": "<= 1.2 x the same on an empty lake",
                "cores": cores,
                "note": f"{n:,} delivered messages, written and compacted in {seed_seconds:.0f} s",
            }
        )
    return rows


if __name__ == "__main__":
    rows_print(run())
