"""The purge's Spark job (workers.jobs.purge): its pure transforms on hand-written rows, and the
whole job on a small lake written by hand, compared with hand-written expected rows."""

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from tests.ledger_rows import event_row, naive
from tests.message_rows import message_row
from workers.jobs.purge import (
    PurgeParams,
    current,
    ids_summary,
    inflow_rows,
    purgeable,
    rewritten_dir,
    run_purge,
    without,
)
from workers.jobs.state import fold_state
from workers.lake.schema import EVENT_SCHEMA, MESSAGE_SCHEMA, ddl
from workers.lake.store import Lake

pytestmark = pytest.mark.spark

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
STATE = "message_id string, queue string, to_state string, at timestamp"


def event(mid, epoch, step, frm, to, *, at, queue="orders", reason=None, stack=None):
    return event_row(mid, epoch, step, frm, to, at=at, queue=queue, reason=reason, stack=stack)


def message(mid, queue="orders", *, version=1, body=None):
    body = body if body is not None else f"body of {mid}".encode()
    return message_row(
        mid, queue, body=body, version=version, content_type="text/plain", enqueued_at=T0
    )


# --- Which messages are purgeable ----------------------------------------------------------------


def test_only_final_messages_older_than_their_queues_retention_are_purgeable(spark):
    now = T0 + 10 * DAY
    state = spark.createDataFrame(
        [
            # orders keeps 1 day: every final state older than that goes, nothing else does
            ("dlvd", "orders", "DLVD", T0),
            ("fail", "orders", "FAIL", T0),
            ("ended", "orders", "ENDED", T0),
            ("tbdl", "orders", "TBDL", T0),
            ("wait", "orders", "WAIT", T0),
            ("dlng", "orders", "DLNG", T0),
            ("ndlv", "orders", "NDLV", T0),
            # final less than a day ago: kept
            ("fresh", "orders", "DLVD", now - DAY + timedelta(seconds=1)),
            # exactly a day ago is not older than a day: kept
            ("edge", "orders", "DLVD", now - DAY),
            # audit keeps 30 days: 10 days is not enough
            ("kept", "audit", "DLVD", T0),
            # a queue that no longer exists keeps the default (7 here): 10 days is enough
            ("orphan", "gone", "FAIL", T0),
        ],
        STATE,
    )

    purged = purgeable(state, now=now, retention_days={"orders": 1, "audit": 30}, default_days=7)

    assertDataFrameEqual(
        purged,
        [
            Row(message_id="dlvd", queue="orders", state="DLVD"),
            Row(message_id="fail", queue="orders", state="FAIL"),
            Row(message_id="ended", queue="orders", state="ENDED"),
            Row(message_id="orphan", queue="gone", state="FAIL"),
        ],
    )


def test_one_queue_may_be_purged_alone(spark):
    state = spark.createDataFrame(
        [("a", "orders", "DLVD", T0), ("b", "payments", "DLVD", T0)], STATE
    )

    purged = purgeable(
        state, now=T0 + 10 * DAY, retention_days={}, default_days=1, queue="payments"
    )

    assertDataFrameEqual(purged, [Row(message_id="b", queue="payments", state="DLVD")])


def test_retention_counts_from_the_moment_a_message_became_final_in_its_current_queue(spark):
    events = spark.createDataFrame(
        [
            # enqueued long ago on orders, moved to orders.late, delivered there 2 days ago
            event("moved", 0, 0, None, "TBDL", at=T0, queue="orders"),
            event("moved", 1, 0, "TBDL", "DLNG", at=T0 + DAY, queue="orders"),
            event("moved", 1, 1, "DLNG", "TBDL", at=T0 + DAY, queue="orders.late"),
            event("moved", 2, 0, "TBDL", "DLNG", at=T0 + 8 * DAY, queue="orders.late"),
            event("moved", 2, 1, "DLNG", "DLVD", at=T0 + 8 * DAY, queue="orders.late"),
            # delivered 9 days ago on orders
            event("old", 0, 0, None, "TBDL", at=T0, queue="orders"),
            event("old", 1, 2, "TBDL", "DLNG", at=T0 + DAY, queue="orders"),
            event("old", 1, 3, "DLNG", "DLVD", at=T0 + DAY, queue="orders"),
        ],
        ddl(EVENT_SCHEMA),
    )

    purged = purgeable(
        fold_state(events),
        now=T0 + 10 * DAY,
        retention_days={"orders": 1, "orders.late": 3},
        default_days=30,
    )

    assertDataFrameEqual(purged, [Row(message_id="old", queue="orders", state="DLVD")])


def test_current_state_is_the_latest_event_by_epoch_and_step(spark):
    events = spark.createDataFrame(
        [
            event("a", 0, 0, None, "TBDL", at=T0),
            event("a", 2, 0, "DLNG", "DLVD", at=T0 + DAY),
            event("a", 1, 5, "TBDL", "DLNG", at=T0 + 2 * DAY),  # later in time, earlier epoch
            event("b", 0, 0, None, "TBDL", at=T0, queue="payments"),
        ],
        ddl(EVENT_SCHEMA),
    )

    assertDataFrameEqual(
        current(events),
        [
            Row(message_id="a", queue="orders", to_state="DLVD", at=naive(T0 + DAY)),
            Row(message_id="b", queue="payments", to_state="TBDL", at=naive(T0)),
        ],
    )


def test_without_drops_every_row_of_a_purged_message(spark):
    rows = spark.createDataFrame(
        [message("a"), message("a", version=2), message("b")], ddl(MESSAGE_SCHEMA)
    ).select("message_id", "version")
    purged = spark.createDataFrame(
        [("a", "orders", "DLVD")], "message_id string, queue string, state string"
    )

    assertDataFrameEqual(without(rows, purged), [Row(message_id="b", version=1)])


# --- The whole job on a lake written by hand ----------------------------------------------------


def _write(store, dataset, rows, label):
    schema = {"events": EVENT_SCHEMA, "messages": MESSAGE_SCHEMA, "state": EVENT_SCHEMA}[dataset]
    return store.write_arrow(
        pa.Table.from_pylist(rows, schema=schema), store.new_dir(dataset, label)
    )


@pytest.fixture
def small_lake(tmp_path):
    """Messages commit 1: a, b, c (orders). Messages commit 2: d (payments), and a's edited
    version 2. Events: commit 3 (ingest of all four), a state snapshot covering it, commit 4
    (delivery: a and c delivered, b quarantined then failed by a decision, d delivered) and
    commit 5 (d's conversation: nothing purged there)."""
    store = Lake(tmp_path / "lake")
    old = T0
    m1 = _write(store, "messages", [message("a"), message("b"), message("c")], "m1")
    m2 = _write(store, "messages", [message("d", "payments"), message("a", version=2)], "m2")
    ingest = [
        event(m, 0, 0, None, "TBDL", at=old, queue="payments" if m == "d" else "orders")
        for m in "abcd"
    ]
    e3 = _write(store, "events", ingest, "e3")
    snapshot = _write(store, "state", ingest, "snapshot")
    delivery = [
        event("a", 1, 0, "TBDL", "DLNG", at=old),
        event("a", 1, 1, "DLNG", "DLVD", at=old),
        event("b", 1, 2, "TBDL", "DLNG", at=old),
        event("b", 1, 3, "DLNG", "NDLV", at=old, reason="bad", stack="Traceback"),
        event("b", 2, 0, "NDLV", "FAIL", at=old),
        event("c", 1, 4, "TBDL", "DLNG", at=old),
        event("c", 1, 5, "DLNG", "NDLV", at=old, reason="bad", stack="Traceback"),
        event("d", 1, 6, "TBDL", "DLNG", at=old, queue="payments"),
        event("d", 1, 7, "DLNG", "DLVD", at=old, queue="payments"),
    ]
    e4 = _write(store, "events", delivery, "e4")
    e5 = _write(store, "events", [event("c", 3, 0, "NDLV", "NDLV", at=old)], "e5")
    return store, {"m1": m1, "m2": m2, "e3": e3, "snapshot": snapshot, "e4": e4, "e5": e5}


def _params(store, paths, tmp_path, **overrides):
    values = dict(
        now=T0 + 10 * DAY,
        retention_days={"orders": 1, "payments": 30},
        default_days=30,
        queue=None,
        lake_root=str(store.root),
        state_paths=store.paths([paths["snapshot"], paths["e4"], paths["e5"]]),
        snapshot_path=store.path(paths["snapshot"]),
        events=[(3, paths["e3"]), (4, paths["e4"]), (5, paths["e5"])],
        messages=[(1, paths["m1"]), (2, paths["m2"])],
        ids_path=str(tmp_path / "ids"),
        out_dir=str(tmp_path / "out"),
    )
    return PurgeParams(**(values | overrides))


def _table(path, columns):
    files = sorted(Path(path).rglob("*.parquet"))
    return pa.concat_tables(pq.read_table(f, columns=columns) for f in files).to_pylist()


def test_the_job_rewrites_each_commit_that_held_a_purged_message_without_it(
    spark, small_lake, tmp_path
):
    store, paths = small_lake

    result = run_purge(spark, _params(store, paths, tmp_path))

    # a (DLVD) and b (FAIL) on orders go; c (NDLV) stays; d is on payments, kept 30 days.
    assert result.purged == 2
    assert _table(tmp_path / "ids", ["message_id", "queue", "state"]) == [
        {"message_id": "a", "queue": "orders", "state": "DLVD"},
        {"message_id": "b", "queue": "orders", "state": "FAIL"},
    ]
    # Commits 3, 4 (events), 1 and 2 (messages) held them; 5 did not and is not rewritten.
    assert result.events == {3: 2, 4: 4}
    assert result.messages == {1: 1, 2: 1}
    assert _table(rewritten_dir(str(tmp_path / "out"), "events", 3), ["message_id"]) == [
        {"message_id": "c"},
        {"message_id": "d"},
    ]
    assert _table(rewritten_dir(str(tmp_path / "out"), "events", 4), ["message_id", "step"]) == [
        {"message_id": "c", "step": 4},
        {"message_id": "c", "step": 5},
        {"message_id": "d", "step": 6},
        {"message_id": "d", "step": 7},
    ]
    assert _table(rewritten_dir(str(tmp_path / "out"), "messages", 1), ["message_id", "body"]) == [
        {"message_id": "c", "body": b"body of c"}
    ]
    # a's edited version went with it.
    assert _table(rewritten_dir(str(tmp_path / "out"), "messages", 2), ["message_id"]) == [
        {"message_id": "d"}
    ]
    assert result.state_rows == 2
    assert sorted(r["message_id"] for r in _table(tmp_path / "out" / "state", ["message_id"])) == [
        "c",
        "d",
    ]
    # The flows they had added, at T0 on orders: a delivered; b entered NDLV once and left it
    # (failed by a person).
    assert sorted(inflow_rows(str(tmp_path / "out"))) == [
        ("orders", T0, "delivered", 1),
        ("orders", T0, "quarantined", 1),
        ("orders", T0, "released", 1),
    ]


def test_a_commit_left_with_nothing_is_reported_empty(spark, small_lake, tmp_path):
    store, paths = small_lake

    result = run_purge(
        spark, _params(store, paths, tmp_path, retention_days={"orders": 1, "payments": 1})
    )

    # a, b and d go. Commit 2 held only d and a's edit: nothing is left of it.
    assert result.purged == 3
    assert result.messages == {1: 1, 2: 0}
    assert result.events == {3: 1, 4: 2}


def test_a_dry_run_writes_the_ids_and_nothing_else(spark, small_lake, tmp_path):
    store, paths = small_lake

    result = run_purge(spark, _params(store, paths, tmp_path, dry_run=True))

    assert result.purged == 2
    assert (result.events, result.messages, result.state_rows) == ({}, {}, None)
    assert not (tmp_path / "out").exists()


def test_the_ids_hash_is_sha256_over_the_sorted_ids_one_a_line(spark, tmp_path):
    # Ids in no particular order, one not ASCII, over two queues and several files.
    rows = [
        ("zz-9", "orders", "DLVD"),
        ("a-1", "payments", "FAIL"),
        ("é-2", "orders", "ENDED"),
        ("m-5", "orders", "DLVD"),
    ]
    df = spark.createDataFrame(rows, "message_id string, queue string, state string")
    df.repartition(3).orderBy("message_id").write.parquet(str(tmp_path / "ids"))

    summary = ids_summary(str(tmp_path / "ids"))

    assert summary.count == 4
    assert summary.sha256 == hashlib.sha256("a-1\nm-5\nzz-9\né-2\n".encode()).hexdigest()
    assert summary.queues == {
        "orders": {
            "count": 3,
            "sha256": hashlib.sha256("m-5\nzz-9\né-2\n".encode()).hexdigest(),
        },
        "payments": {"count": 1, "sha256": hashlib.sha256(b"a-1\n").hexdigest()},
    }
    assert summary.states == {
        ("orders", "DLVD"): 2,
        ("orders", "ENDED"): 1,
        ("payments", "FAIL"): 1,
    }
