"""Retention benchmark (R15): a purge of N/2 final messages out of N (default 2M), past their
queue's retention, from the moment it starts until the lake is rewritten and the read models are
current (the refresh after it finds nothing to fold): messages purged a second, and the lake's
size before and after. Also the preview (a dry run) of the same purge. Each with its CPU µs a
purged message (bench.support.CpuMeter: this process, its JVM and Spark's Python workers, and the
database server on PostgreSQL).

The lake is written directly with pyarrow under the commit protocol, as bench_refresh writes it:
chunks of 100k messages, each a messages commit (bodies of about 250 B, JSON orders) and an events
commit of their lives, in 20 queues; then a state snapshot and a full refresh. Every chunk mixes
the two halves, so every commit is rewritten:
- a quarter DLVD at the first attempt (not in the message index), a quarter FAIL after a
  quarantine (indexed, in 50 failure groups): final, 60 days old, retention 30 days: purged;
- half NDLV: kept.

Runs on SQLite (the embedded default) and then, when PostgreSQL answers on 127.0.0.1:5432 and
DATABASE_URL is not set, again on PostgreSQL (BENCH_POSTGRES_URL, by default the database
antidote_bench on it, created if missing) in a child process. BENCH_MESSAGES overrides N.
"""

import json
import os
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

from bench.bench_refresh import PATTERNS, QUEUES, T0, _pattern, lake_seed
from bench.support import CpuMeter, PeakMemory, bench_start, on_both_databases, rows_print
from workers.lake.schema import EVENT_SCHEMA

NOW = T0 + timedelta(days=60)
# The life of message i, by i % 4: what it ends as.
LIVES = {
    0: [(None, "TBDL"), ("TBDL", "DLNG"), ("DLNG", "DLVD")],
    1: [(None, "TBDL"), ("TBDL", "DLNG"), ("DLNG", "NDLV")],
    2: [(None, "TBDL"), ("TBDL", "DLNG"), ("DLNG", "NDLV"), ("NDLV", "FAIL")],
    3: [(None, "TBDL"), ("TBDL", "DLNG"), ("DLNG", "NDLV")],
}


def _body(i):
    return json.dumps(
        {
            "order_id": f"o{i:09d}",
            "customer": f"c{(i * 7919) % 100_000:06d}",
            "items": [{"sku": f"SKU-{(i * 31) % 500:05d}", "qty": 1 + i % 4}],
            "note": f"deliver to door {(i * 13) % 997} before {(i * 17) % 24}:00",
        },
        separators=(",", ":"),
    ).encode()


def _chunk(start, n, epoch):
    ids = [f"m{i:09d}" for i in range(start, start + n)]
    chosen = [_pattern(i % PATTERNS) for i in range(start, start + n)]
    bodies = [_body(i) for i in range(start, start + n)]
    enqueued = [T0 + timedelta(seconds=i) for i in range(start, start + n)]
    messages = pa.table(
        {
            "message_id": ids,
            "version": pa.array([1] * n, pa.int32()),
            "queue": [c[0] for c in chosen],
            "body": pa.array(bodies, pa.binary()),
            "body_sha256": [f"{i:064x}" for i in range(start, start + n)],
            "body_size": pa.array([len(b) for b in bodies], pa.int64()),
            "content_type": ["application/json"] * n,
            "headers": ["{}"] * n,
            "conversation_id": [f"conv-{i // 4:08d}" for i in range(start, start + n)],
            "sender": [f"sender{i % 100}@example.test" for i in range(start, start + n)],
            "enqueued_at": pa.array(enqueued, pa.timestamp("us", tz="UTC")),
        }
    )
    columns = {
        name: []
        for name in (
            "message_id", "epoch", "step", "at", "from_state", "to_state", "queue", "attempt",
            "delivery_count", "reason", "exception_type", "stack",
        )
    }  # fmt: skip
    step = 0
    for k, i in enumerate(range(start, start + n)):
        queue, exc, reason, stack = chosen[k]
        for frm, to in LIVES[i % 4]:
            failed = frm == "DLNG" and to == "NDLV"
            step += 1
            columns["message_id"].append(ids[k])
            columns["epoch"].append(0 if frm is None else epoch)
            columns["step"].append(step)
            columns["at"].append(enqueued[k] + timedelta(minutes=5 if frm else 0))
            columns["from_state"].append(frm)
            columns["to_state"].append(to)
            columns["queue"].append(queue)
            columns["attempt"].append(0 if frm is None else 1)
            columns["delivery_count"].append(1 if failed or to == "FAIL" else 0)
            columns["reason"].append(reason.format(n=i * 7) if failed else None)
            columns["exception_type"].append(exc if failed else None)
            columns["stack"].append(stack.format(line=40 + i % 5) if failed else None)
    m = len(columns["message_id"])
    typed = {"at", "epoch", "step", "attempt", "delivery_count"} | {
        "message_id", "from_state", "to_state", "queue", "reason", "exception_type", "stack"
    }  # fmt: skip
    arrays = {name: pa.array(columns[name], EVENT_SCHEMA.field(name).type) for name in typed}
    arrays |= {
        "candidate": pa.array([False] * m),
        "batch_limit": pa.array([0] * m, pa.int32()),
        "body_version": pa.array([1] * m, pa.int32()),
        "actor": pa.array(["bench"] * m),
        "run_id": pa.array(["bench"] * m),
    }
    events = pa.Table.from_arrays(
        [arrays.get(f.name, pa.nulls(m, f.type)) for f in EVENT_SCHEMA], schema=EVENT_SCHEMA
    )
    return messages, events


def _seed(store, n):
    from bench.console_seed import _insert

    def beside(messages, events, commit):
        # What ingest records of each message: its key, body hash and commit.
        _insert(
            "ingest_messagekey",
            [
                {
                    "message_id": mid,
                    "body_sha256": sha,
                    "queue": queue,
                    "commit_id": commit,
                    "ingested_at": T0,
                }
                for mid, sha, queue in zip(
                    messages["message_id"].to_pylist(),
                    messages["body_sha256"].to_pylist(),
                    messages["queue"].to_pylist(),
                    strict=True,
                )
            ],
        )

    lake_seed(store, n, _chunk, purpose="bench purge: lives", each=beside)


def _lake_mib(store, *, live):
    """Size of the lake's Parquet files: only the committed directories (`live`), or all."""
    from console.lake.models import LakeCommit

    if live:
        folders = [
            Path(store.path(p))
            for p in LakeCommit.objects.filter(retired=False).values_list("path", flat=True)
        ]
    else:
        folders = [store.root]
    size = sum(f.stat().st_size for folder in folders for f in folder.rglob("*.parquet"))
    return round(size / 2**20)


def run_here():
    """The benchmark on the database of this process's settings."""
    n = bench_start("purge", messages=2_000_000)
    from django.conf import settings
    from django.db import connection

    from bench.console_seed import analyze, clear
    from console.lake.execution import lake_state_compact_if_due
    from console.lake.services import lake
    from console.queues.models import Queue
    from console.readmodels.execution import read_models_refresh
    from console.readmodels.models import (
        MessageIndex,
    )
    from console.retention.execution import purge_dirs_delete, purge_run
    from console.retention.models import PurgeRun
    from console.spark import spark_from_settings

    cores = os.cpu_count()
    db = connection.vendor
    clear()
    PurgeRun.objects.all().delete()
    Queue.objects.bulk_create(
        [Queue(name=q, handler="workers.demo.handlers.noop", retention_days=30) for q in QUEUES]
    )
    store = lake()
    started = time.perf_counter()
    _seed(store, n)
    spark = spark_from_settings()
    lake_state_compact_if_due(force=True, spark=spark)
    read_models_refresh(full=True, spark=spark)
    analyze()
    seed_seconds = time.perf_counter() - started
    final = sum(1 for i in range(n) if i % 4 in (0, 2))
    indexed = MessageIndex.objects.count()
    before_mib = _lake_mib(store, live=True)

    with CpuMeter() as preview_meter:
        preview = purge_run(now=NOW, dry_run=True, actor="bench", spark=spark)
    preview_seconds = preview_meter.seconds
    assert (preview.status, preview.total) == ("done", final), (preview.status, preview.error)

    with PeakMemory() as memory, CpuMeter() as meter:
        purge = purge_run(now=NOW, actor="bench", spark=spark)
    seconds = meter.seconds
    assert (purge.status, purge.total) == ("done", final), (purge.status, purge.error)
    assert purge.ids_sha256 == preview.ids_sha256
    # The read models are current: the refresh after the purge has nothing to fold.
    assert read_models_refresh(spark=spark) is None
    assert MessageIndex.objects.count() == indexed - final // 2
    after_mib = _lake_mib(store, live=True)
    on_disk_mib = _lake_mib(store, live=False)
    settings.PURGE_GRACE_SECONDS = 0
    purge_dirs_delete()
    rows = [
        {
            "benchmark": f"purge preview ({db})",
            "messages": n,
            "purged": final,
            "seconds": round(preview_seconds, 1),
            **preview_meter.per_message(final),
            "msgs_per_s": round(final / preview_seconds),
            "cores": cores,
        },
        {
            "benchmark": f"purge ({db})",
            "messages": n,
            "purged": final,
            "seconds": round(seconds, 1),
            **meter.per_message(final),
            "msgs_per_s": round(final / seconds),
            "lake_before_mib": before_mib,
            "lake_after_mib": after_mib,
            "on_disk_until_grace_mib": on_disk_mib,
            "after_grace_mib": _lake_mib(store, live=False),
            "commits": purge.lake_changes,
            "peak_mib": memory.peak_mib,
            "cores": cores,
        },
        {
            "benchmark": f"seed + snapshot + full refresh ({db}, setup)",
            "seconds": round(seed_seconds, 1),
        },
    ]
    return rows


def run():
    return on_both_databases(run_here, "bench.bench_purge")


if __name__ == "__main__":
    rows_print(run_here())
