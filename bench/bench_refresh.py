"""Refresh benchmarks (issue 3: the console's read models).

1. Full refresh of N quarantined messages (default 1M) over 20 queues and 50 failure groups.
2. Incremental refresh after 100 of them changed (reprocessed: NDLV -> TBDL), before the history
   compaction (every events commit scanned) and after it (the 100 messages' bucket files read),
   each against the same refresh on a lake of only those 100 messages: the ratio says what the
   lake's size costs a small refresh (warm Spark session). A Spark session keeps getting faster
   for its first fifteen to twenty refreshes (its JIT, its code generation: 2.4 s, then 1.5 s
   at the fifth, 1.1-1.3 s from the twentieth on), and whichever lake was measured later won by
   up to 40 %: the session is warmed by SESSION_WARM_UP refreshes first, then the lake of 100
   is measured before the large one and again after it, and the ratio is against the mean.
3. Incremental refresh after 10k of them changed.
Each with its CPU µs a message (bench.support.CpuMeter: this process, its JVM and Spark's Python
workers, and the database server on PostgreSQL); the small refreshes', over their three timed.

The lake is written directly with pyarrow under the commit protocol (ingest's TBDL, then a
delivery attempt that quarantines each message, in chunks), not by the delivery engine: the engine
has its own benchmark, and this one measures the refresh alone. Runs on the DATABASE_URL database
(SQLite by default, PostgreSQL when set). BENCH_MESSAGES overrides N.
"""

import os
import statistics
import time
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from bench.support import (
    CPU_PER_MESSAGE,
    CpuMeter,
    PeakMemory,
    cpu_per_message,
    django_setup,
    fresh_state,
    lake_table,
    messages_from_env,
)

CHUNK = 100_000
CHANGED = 10_000
SMALL = 100
# Untimed small refreshes before the first timed series, and before each of the others (see
# the module's docstring).
SESSION_WARM_UP = 20
WARM_UP = 3
QUEUES = [f"bench.q{i:02d}" for i in range(20)]
PATTERNS = 50
EXCEPTIONS = ["KeyError", "ValueError", "ConnectionError", "PermanentFailure", "TimeoutError"]
WORDS = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
]  # fmt: skip
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _pattern(p):
    word = WORDS[p % len(WORDS)]
    return (
        QUEUES[p % len(QUEUES)],
        EXCEPTIONS[p % len(EXCEPTIONS)],
        f"{word} lookup failed for order {{n}} in zone {WORDS[p // len(WORDS)]}",
        "Traceback (most recent call last):\n"
        '  File "/srv/app/workers/engine/isolation.py", line 120, in _child\n'
        "    outcome = call(message)\n"
        f'  File "/srv/app/shop/handlers.py", line {{line}}, in handle_{word}\n'
        "    return lookup(order)\n"
        f'  File "/srv/app/shop/lookup_{WORDS[p // len(WORDS)]}.py", line 33, in lookup\n'
        "    raise Error(order)\n",
    )


def _chunk_tables(start, n, epoch):
    patterns = [_pattern(p) for p in range(PATTERNS)]
    ids = [f"m{i:09d}" for i in range(start, start + n)]
    chosen = [patterns[i % PATTERNS] for i in range(start, start + n)]
    queues = [c[0] for c in chosen]
    enqueued = [T0 + timedelta(seconds=i) for i in range(start, start + n)]
    body = b"x" * 200
    messages = pa.table(
        {
            "message_id": ids,
            "version": pa.array([1] * n, pa.int32()),
            "queue": queues,
            "body": pa.array([body] * n, pa.binary()),
            "body_sha256": [f"{i:064x}" for i in range(start, start + n)],
            "body_size": pa.array([len(body)] * n, pa.int64()),
            "content_type": ["application/json"] * n,
            "headers": ["{}"] * n,
            "conversation_id": [f"conv-{i // 4:08d}" for i in range(start, start + n)],
            "sender": [f"sender{i % 100}@example.test" for i in range(start, start + n)],
            "enqueued_at": pa.array(enqueued, pa.timestamp("us", tz="UTC")),
        }
    )
    failed_at = [t + timedelta(minutes=5) for t in enqueued]
    rows = {name: [] for name in ("message_id", "epoch", "step", "at", "from_state", "to_state")}
    extra = {name: [] for name in ("queue", "attempt", "delivery_count", "reason", "exc", "stack")}
    for k, (i, mid) in enumerate(zip(range(start, start + n), ids, strict=True)):
        queue, exc, reason, stack = chosen[k]
        for step, (frm, to, at) in enumerate(
            [
                (None, "TBDL", enqueued[k]),
                ("TBDL", "DLNG", failed_at[k]),
                ("DLNG", "NDLV", failed_at[k]),
            ]
        ):
            rows["message_id"].append(mid)
            rows["epoch"].append(0 if step == 0 else epoch)
            rows["step"].append(3 * k + step)
            rows["at"].append(at)
            rows["from_state"].append(frm)
            rows["to_state"].append(to)
            extra["queue"].append(queue)
            failed = step == 2
            extra["attempt"].append(1 if step else 0)
            extra["delivery_count"].append(1 if failed else 0)
            extra["reason"].append(reason.format(n=i * 7) if failed else None)
            extra["exc"].append(exc if failed else None)
            extra["stack"].append(stack.format(line=40 + i % 5) if failed else None)
    m = len(rows["message_id"])
    events = pa.table(
        {
            "message_id": rows["message_id"],
            "epoch": pa.array(rows["epoch"], pa.int64()),
            "step": pa.array(rows["step"], pa.int64()),
            "at": pa.array(rows["at"], pa.timestamp("us", tz="UTC")),
            "from_state": rows["from_state"],
            "to_state": rows["to_state"],
            "queue": extra["queue"],
            "attempt": pa.array(extra["attempt"], pa.int32()),
            "delivery_count": pa.array(extra["delivery_count"], pa.int32()),
            "candidate": pa.array([False] * m),
            "batch_limit": pa.array([0] * m, pa.int32()),
            "next_attempt_at": pa.nulls(m, pa.timestamp("us", tz="UTC")),
            "body_version": pa.array([1] * m, pa.int32()),
            "actor": ["bench"] * m,
            "run_id": ["bench"] * m,
            "reason": extra["reason"],
            "exception_type": extra["exc"],
            "stack": extra["stack"],
            "queue_streak": pa.nulls(m, pa.int32()),
        }
    )
    return messages, events


def _commit(store, dataset, table, key, epoch=None):
    from django.db import transaction

    from console.lake.services import lake_commit_record

    path = store.write_arrow(lake_table(dataset, table), store.new_dir(dataset, "bench"))
    with transaction.atomic():
        return lake_commit_record(
            dataset=dataset, path=path, row_count=table.num_rows, idempotency_key=key, epoch=epoch
        ).id


def lake_seed(store, n, chunk_tables, *, purpose, each=None):
    """n messages and their events committed to the lake, CHUNK at a time, in one new epoch:
    `chunk_tables(start, count, epoch)` makes a chunk's (messages, events) tables, and
    `each(messages, events, commit_id)`, when given, records what the product holds beside the
    lake for a chunk once it is committed (commit_id: its messages commit)."""
    from console.lake.services import epoch_allocate

    epoch = epoch_allocate(purpose=purpose)
    for start in range(0, n, CHUNK):
        messages, events = chunk_tables(start, min(CHUNK, n - start), epoch)
        commit = _commit(store, "messages", messages, f"bench:{start}")
        _commit(store, "events", events, f"bench:{start}", epoch)
        if each is not None:
            each(messages, events, commit)


def _seed(store, n):
    lake_seed(store, n, _chunk_tables, purpose="bench refresh: quarantine")


def _reprocess(store, n, changed):
    """`changed` quarantined messages, spread over the lake, reprocessed: NDLV -> TBDL."""
    from console.lake.services import epoch_allocate
    from workers.lake.schema import EVENT_SCHEMA

    epoch = epoch_allocate(purpose="bench refresh: reprocess")
    every = max(1, n // changed)
    # Spread over the lake and over the failure groups.
    ids = [f"m{k * every + k % min(every, PATTERNS):09d}" for k in range(min(changed, n))]
    k = len(ids)
    at = T0 + timedelta(days=30)
    table = pa.table(
        {
            "message_id": ids,
            "epoch": pa.array([epoch] * k, pa.int64()),
            "step": pa.array(range(k), pa.int64()),
            "at": pa.array([at] * k, pa.timestamp("us", tz="UTC")),
            "from_state": ["NDLV"] * k,
            "to_state": ["TBDL"] * k,
            "queue": [_pattern(int(m[1:]) % PATTERNS)[0] for m in ids],
            "attempt": pa.array([0] * k, pa.int32()),
            "delivery_count": pa.array([0] * k, pa.int32()),
            "candidate": pa.array([False] * k),
            "batch_limit": pa.array([0] * k, pa.int32()),
            "next_attempt_at": pa.nulls(k, pa.timestamp("us", tz="UTC")),
            "body_version": pa.array([1] * k, pa.int32()),
            "actor": ["admin"] * k,
            "run_id": pa.nulls(k, pa.string()),
            "reason": ["reprocessed"] * k,
            "exception_type": pa.nulls(k, pa.string()),
            "stack": pa.nulls(k, pa.string()),
            "queue_streak": pa.nulls(k, pa.int32()),
        },
        schema=EVENT_SCHEMA,
    )
    _commit(store, "events", table, f"bench:reprocess:{epoch}", epoch)
    return k


def run():
    django_setup()
    from django.conf import settings
    from django.db import connection

    from console.lake.execution import lake_history_compact_if_due, lake_state_compact_if_due
    from console.lake.services import lake
    from console.readmodels.execution import read_models_refresh
    from console.readmodels.models import (
        FailureGroup,
        MessageIndex,
    )
    from console.spark import spark_from_settings

    settings.REFRESH_ON_COMMIT = False
    n = messages_from_env(1_000_000)
    cores = os.cpu_count()
    spark = spark_from_settings()
    rows = []
    db = connection.vendor

    def small_refresh(size, warm_up=WARM_UP):
        """Median seconds of three refreshes of SMALL reprocessed messages of a lake of `size`,
        after `warm_up` untimed ones, and their CPU µs a message."""
        times, cpu = [], 0.0
        for timed in [False] * warm_up + [True] * 3:
            done = _reprocess(lake(), size, SMALL)
            with CpuMeter() as meter:
                assert read_models_refresh(spark=spark).changed == done
            if timed:
                times.append(meter.seconds)
                cpu += meter.cpu_seconds
        return statistics.median(times), cpu_per_message(cpu, 3 * SMALL)[CPU_PER_MESSAGE]

    def alone(session_warm_up=0):
        """The same small refresh on a lake of only the messages it changes, its history
        compacted first as the large lake's is: each refresh adds an events commit, and a lake
        of 100 left with twenty-odd loose commits (the session's warm-up) read every one of them
        (1.3 s a refresh becoming 2.2 s)."""
        fresh_state("refresh-small")
        _seed(lake(), SMALL)
        read_models_refresh(full=True, spark=spark)
        for _ in range(session_warm_up):
            _reprocess(lake(), SMALL, SMALL)
            read_models_refresh(spark=spark)
        lake_history_compact_if_due(force=True, spark=spark)
        return small_refresh(SMALL)

    alone_first, alone_first_cpu = alone(SESSION_WARM_UP)
    fresh_state("refresh")
    store = lake()
    started = time.perf_counter()
    _seed(store, n)
    seed_seconds = time.perf_counter() - started
    lake_state_compact_if_due(force=True, spark=spark)

    with CpuMeter() as meter, PeakMemory() as memory:
        full = read_models_refresh(full=True, spark=spark)
    seconds = meter.seconds
    assert full.changed == n, full.changed
    assert MessageIndex.objects.filter(state="NDLV").count() == n
    assert FailureGroup.objects.count() == PATTERNS, FailureGroup.objects.count()
    rows.append(
        {
            "benchmark": f"full refresh ({db})",
            "messages": n,
            "seconds": round(seconds, 2),
            **meter.per_message(n),
            "per_second": round(n / seconds),
            "peak_mib": memory.peak_mib,
            "goal": "<= 180 s on 2 cores",
            "cores": cores,
            "note": f"lake written in {seed_seconds:.0f} s",
        }
    )

    before = small_refresh(n)
    with CpuMeter() as meter:
        generation = lake_history_compact_if_due(force=True, spark=spark)
    rows.append(
        {
            "benchmark": "history compaction, every event at once",
            "messages": n,
            "seconds": round(meter.seconds, 2),
            **meter.per_message(n),
            "cores": cores,
            "note": f"{generation.row_count:,} events into {generation.buckets} bucket files",
        }
    )
    after = small_refresh(n)

    changed = _reprocess(store, n, CHANGED)
    with CpuMeter() as meter:
        incremental = read_models_refresh(spark=spark)
    seconds = meter.seconds
    assert incremental.changed == changed, incremental.changed
    # (and the SMALL ones reprocessed before)
    assert MessageIndex.objects.filter(state="TBDL").count() >= changed
    rows.append(
        {
            "benchmark": f"incremental refresh ({db})",
            "messages": changed,
            "seconds": round(seconds, 2),
            **meter.per_message(changed),
            "per_second": round(changed / seconds),
            "goal": "<= 15 s",
            "cores": cores,
            "note": f"over a lake of {n:,} messages",
        }
    )

    alone_last, alone_last_cpu = alone()
    alone_mean = (alone_first + alone_last) / 2
    for label, (seconds, cpu) in (
        ("no history generations", before),
        ("history generations", after),
    ):
        rows.append(
            {
                "benchmark": f"incremental refresh ({db}), {label}",
                "messages": SMALL,
                "seconds": round(seconds, 2),
                CPU_PER_MESSAGE: cpu,
                "alone_cpu_us_per_msg": round((alone_first_cpu + alone_last_cpu) / 2, 1),
                "goal": "<= 1.2 x the same on a lake of only them",
                "cores": cores,
                "note": (
                    f"over a lake of {n:,} messages: {seconds / alone_mean:.2f} x "
                    f"{alone_mean:.2f} s, the same on a lake of only them (measured before: "
                    f"{alone_first:.2f} s, and after: {alone_last:.2f} s)"
                ),
            }
        )
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
