"""History benchmark: a message's history (its detail page's timeline, `message_history`) against
the number of events commits in the lake.

The lake grows commit by commit, each commit holding what a delivery run commits: the first event
of NEW messages just ingested and EVENTS transitions of messages ingested before (a third of them
failures, with a reason and a stack). The history compaction runs as the spark worker runs it
after every delivery run (`lake_history_compact_if_due`: due every HISTORY_COMPACT_AFTER_COMMITS
commits, 10 by default). At 1, 100, 1,000 and 2,000 commits, and HISTORY_COMPACT_AFTER_COMMITS - 1
commits after the last three (the most a reader finds not yet folded), READS histories of random
messages are read and the median time is reported:

- before, previous code: every events commit read as one pyarrow dataset with a filter on the id,
  as `message_history` did before history generations;
- before, no generations: `message_history` on the lake without its generations (hidden in a
  transaction that is rolled back): every events commit read file by file;
- after: `message_history` on the lake as it is, generations and the commits after them, with
  its CPU ms a read (bench.support.CpuMeter: this process and, on PostgreSQL, the database's).

Writes the lake with pyarrow under the commit protocol, on the DATABASE_URL database. BENCH_COMMITS
sets the largest number of commits (2,000).
"""

import os
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
from django.db import transaction

from bench.support import CPU_PER_REQUEST, CpuMeter, django_setup, fresh_state

NEW = 100  # messages ingested per commit
EVENTS = 200  # transitions of earlier messages per commit
READS = 31
CHECKPOINTS = (1, 100, 1_000, 2_000)
T0 = datetime(2026, 3, 1, tzinfo=UTC)
STACK = (
    "Traceback (most recent call last):\n"
    '  File "/srv/app/workers/engine/isolation.py", line 120, in _child\n'
    "    outcome = call(message)\n"
    '  File "/srv/shop/handlers.py", line {line}, in handle_order\n'
    "    return inventory.reserve(order)\n"
    "ConnectionError: inventory service did not answer for order {order}\n"
)


def _events(k, rng, known):
    """Commit k's events: NEW new messages' first events, and EVENTS transitions of earlier
    ones (a failure, a retry or a delivery)."""
    from workers.lake.schema import EVENT_SCHEMA

    rows = []
    at = T0 + timedelta(minutes=k)
    for i in range(NEW):
        mid = f"m{(k - 1) * NEW + i:09d}"
        rows.append({"message_id": mid, "epoch": k, "step": i, "at": at, "to_state": "TBDL"})
    for i in range(EVENTS if known else 0):
        mid = f"m{rng.randrange(known):09d}"
        kind = i % 3
        failed = kind == 0
        rows.append(
            {
                "message_id": mid,
                "epoch": k,
                "step": NEW + i,
                "at": at,
                "from_state": "DLNG",
                "to_state": ("WAIT", "TBDL", "DLVD")[kind],
                "attempt": 1,
                "delivery_count": int(failed),
                "reason": f"inventory lookup failed for {mid}" if failed else None,
                "exception_type": "ConnectionError" if failed else None,
                "stack": STACK.format(line=40 + i % 7, order=mid) if failed else None,
                "run_id": f"run-{k}",
            }
        )
    for row in rows:
        row.setdefault("queue", "orders")
        row.setdefault("actor", "bench")
    return pa.Table.from_pylist(rows, schema=EVENT_SCHEMA)


def _commit(store, k, table):
    from console.lake.services import lake_commit_record

    path = store.write_arrow(table, store.new_dir("events", "bench"))
    with transaction.atomic():
        lake_commit_record(
            dataset="events", path=path, row_count=table.num_rows, idempotency_key=f"bench:{k}"
        )


def _history(message_id):
    from console.delivery.selectors import message_history

    return message_history(message_id=message_id)


def _previous_code(message_id):
    """message_history as it was before history generations."""
    from console.lake.selectors import lake_paths
    from console.lake.services import lake

    table = lake().read_arrow(
        "events", lake_paths(dataset="events"), filter=pc.field("message_id") == message_id
    )
    return sorted(table.to_pylist(), key=lambda r: (r["epoch"], r["step"]))


def _median_ms(rng, known, reads=READS, read=_history):
    """The median milliseconds of `reads` reads, and their CPU ms a read."""
    for _ in range(3):  # warm: imports, the catalog's first query
        read(f"m{rng.randrange(known):09d}")
    times = []
    with CpuMeter() as meter:
        for _ in range(reads):
            mid = f"m{rng.randrange(known):09d}"
            started = time.perf_counter()
            history = read(mid)
            times.append(time.perf_counter() - started)
            assert history and history[0]["message_id"] == mid
    return round(statistics.median(times) * 1000, 1), round(meter.ms_per_request(reads), 2)


def _without_generations_ms(rng, known, reads):
    """The history read with every generation hidden (rolled back): every events commit read."""
    from console.lake.models import LakeCommit

    with transaction.atomic():
        LakeCommit.objects.filter(dataset="history").update(retired=True)
        ms, _ = _median_ms(rng, known, reads)
        transaction.set_rollback(True)
    return ms


def run():
    django_setup()
    from django.conf import settings

    from console.lake.execution import lake_history_compact_if_due
    from console.lake.models import LakeCommit
    from console.lake.selectors import lake_history_inputs
    from console.lake.services import lake
    from console.spark import spark_from_settings

    settings.REFRESH_ON_COMMIT = False
    largest = int(os.environ.get("BENCH_COMMITS", CHECKPOINTS[-1]))
    checkpoints = [c for c in CHECKPOINTS if c < largest] + [largest]
    tails = {c + settings.HISTORY_COMPACT_AFTER_COMMITS - 1 for c in checkpoints[1:]}
    fresh_state("history")
    store = lake()
    spark = spark_from_settings()
    rng = random.Random(7)
    rows, folds = [], []
    writing = 0.0
    last = max(tails)
    for k in range(1, last + 1):
        started = time.perf_counter()
        _commit(store, k, _events(k, rng, (k - 1) * NEW))
        writing += time.perf_counter() - started
        known = k * NEW
        measured = k in checkpoints or k in tails
        if k in checkpoints:
            reads = READS if k <= 100 else 11
            before = {
                "previous_code_ms": _median_ms(rng, known, reads, read=_previous_code)[0],
                "no_generations_ms": _without_generations_ms(rng, known, reads),
            }
        # As the spark worker does after every delivery run.
        started = time.perf_counter()
        if lake_history_compact_if_due(spark=spark) is not None:
            folds.append(time.perf_counter() - started)
        if not measured:
            continue
        inputs = lake_history_inputs()
        after_ms, after_cpu = _median_ms(rng, known)
        rows.append(
            {
                "commits": k,
                "events": sum(
                    LakeCommit.objects.filter(dataset="events").values_list("row_count", flat=True)
                ),
                **(before if k in checkpoints else {}),
                "after_ms": after_ms,
                CPU_PER_REQUEST: after_cpu,
                "generations": len(inputs.generations),
                "not_yet_folded": len(inputs.events),
                "goal": "<= 20 ms",
                "cores": os.cpu_count(),
                # The machine's other work weighs on every millisecond here: say how much.
                "load": round(os.getloadavg()[0], 1),
            }
        )
    folded = (
        f"{len(folds)} compactions, median {statistics.median(folds):.1f} s, "
        f"longest {max(folds):.1f} s"
        if folds
        else "no compaction"
    )
    rows.append({"commits": last, "note": f"{folded}; lake written in {writing:.0f} s"})
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
