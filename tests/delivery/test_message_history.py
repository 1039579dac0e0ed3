"""A message's history read from the history generations and the events commits after them:
the same rows, in the same order, as a read of every events commit, before and after each
compaction; generations merge as they grow; and a compaction that finds the lake changed since
it read it commits nothing."""

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from django.db import transaction

from console.delivery.selectors import message_history
from console.lake.execution import (
    lake_history_compact_if_due,
    lake_history_fold,
    lake_history_fold_commit,
)
from console.lake.models import LakeCommit
from console.lake.selectors import lake_history_inputs
from console.lake.services import lake, lake_commit_record, lake_history_dirs_delete
from workers.jobs.history import merge_plan
from workers.lake.history import GROUP_ROWS, bucket_of, bucket_path, read_messages
from workers.lake.schema import EVENT_SCHEMA, spark_schema

pytestmark = [pytest.mark.spark]

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def event(message_id, epoch, step, frm, to, **fields):
    failed = frm == "DLNG" and to in ("WAIT", "NDLV")
    return {
        "message_id": message_id,
        "epoch": epoch,
        "step": step,
        "at": T0 + timedelta(minutes=epoch, seconds=step),
        "from_state": frm,
        "to_state": to,
        "queue": "orders",
        "attempt": 1 if frm else 0,
        "delivery_count": 1 if failed else 0,
        "candidate": False,
        "batch_limit": 0,
        "next_attempt_at": None,
        "body_version": 1,
        "actor": "test",
        "run_id": f"run-{epoch}",
        "reason": f"{message_id} failed in epoch {epoch}" if failed else None,
        "exception_type": "LookupError" if failed else None,
        "stack": "Traceback (most recent call last):\n  ...\n" if failed else None,
        "queue_streak": None,
    } | fields


def commit(events):
    """One events commit of these rows, as a writer makes it."""
    store = lake()
    table = pa.Table.from_pylist(events, schema=EVENT_SCHEMA)
    path = store.write_arrow(table, store.new_dir("events", "test"))
    with transaction.atomic():
        return lake_commit_record(
            dataset="events", path=path, row_count=table.num_rows, idempotency_key=path
        )


def every_event(message_id):
    """What the history was before generations: every events commit read, in id order, and the
    rows sorted by (epoch, step)."""
    paths = LakeCommit.objects.filter(dataset="events", retired=False).order_by("id")
    table = lake().read_arrow(
        "events",
        list(paths.values_list("path", flat=True)),
        filter=pc.field("message_id") == message_id,
    )
    return sorted(table.to_pylist(), key=lambda r: (r["epoch"], r["step"]))


def transitions(message_id):
    return [
        (e["from_state"], e["to_state"], e["epoch"]) for e in message_history(message_id=message_id)
    ]


@pytest.fixture
def ledger(db, lake_root, settings):
    """Three messages over four commits; the fourth comes from a writer with an older epoch
    (a decision chunk that started before the delivery run), so its events sort first."""
    settings.REFRESH_ON_COMMIT = False
    commit([event(m, 1, 0, None, "TBDL") for m in ("a", "b", "c")])
    commit(
        [
            *(event("a", 5, 1, "TBDL", "DLNG"), event("a", 5, 2, "DLNG", "WAIT")),
            *(event("b", 5, 1, "TBDL", "DLNG"), event("b", 5, 2, "DLNG", "DLVD")),
        ]
    )
    commit([event("a", 6, 1, "WAIT", "TBDL"), event("a", 6, 2, "TBDL", "DLNG")])
    commit([event("a", 3, 7, "DLNG", "NDLV"), event("c", 3, 1, "TBDL", "DLNG")])
    return ["a", "b", "c"]


def histories(ids):
    return {m: message_history(message_id=m) for m in ids}


def test_the_history_is_read_the_same_before_and_after_compaction(ledger, spark):
    before = histories(ledger)
    assert before == {m: every_event(m) for m in ledger}
    assert transitions("a") == [
        (None, "TBDL", 1),
        ("DLNG", "NDLV", 3),
        ("TBDL", "DLNG", 5),
        ("DLNG", "WAIT", 5),
        ("WAIT", "TBDL", 6),
        ("TBDL", "DLNG", 6),
    ]

    generation = lake_history_compact_if_due(force=True, spark=spark)

    assert (generation.dataset, generation.row_count, generation.buckets) == ("history", 11, 1)
    assert generation.covers_upto == LakeCommit.objects.filter(dataset="events").latest("id").id
    inputs = lake_history_inputs()
    assert ([g.id for g in inputs.generations], inputs.events) == ([generation.id], [])
    assert histories(ledger) == before
    # The ledger is kept whole: other readers follow its commits.
    assert not LakeCommit.objects.filter(dataset="events", retired=True).exists()


def test_events_after_the_newest_generation_are_read_from_their_commits(ledger, spark):
    lake_history_compact_if_due(force=True, spark=spark)
    commit([event("a", 7, 1, "DLNG", "DLVD"), event("d", 7, 0, None, "TBDL")])
    commit([event("c", 4, 2, "DLNG", "NDLV")])

    assert len(lake_history_inputs().events) == 2
    assert histories([*ledger, "d"]) == {m: every_event(m) for m in [*ledger, "d"]}
    assert transitions("c") == [(None, "TBDL", 1), ("TBDL", "DLNG", 3), ("DLNG", "NDLV", 4)]
    assert transitions("d") == [(None, "TBDL", 7)]


def test_a_commit_written_by_spark_is_read_as_a_dataset_read_finds_it(ledger, spark):
    # A delivery run's outcomes are written by Spark: its own timestamps, its own column order,
    # and here a column an older writer did not know.
    store = lake()
    path = store.new_dir("events", "spark")
    rows = [event("a", 8, 1, "DLNG", "DLVD"), event("e", 8, 0, None, "TBDL")]
    frame = spark.createDataFrame(rows, schema=spark_schema(EVENT_SCHEMA))
    names = [n for n in reversed(EVENT_SCHEMA.names) if n != "queue_streak"]
    frame.select(*names).repartition(2).write.parquet(store.path(path))
    with transaction.atomic():
        lake_commit_record(dataset="events", path=path, row_count=2, idempotency_key=path)

    assert histories(["a", "e"]) == {m: every_event(m) for m in ("a", "e")}
    assert transitions("e") == [(None, "TBDL", 8)]
    assert message_history(message_id="a")[-1]["at"] == T0 + timedelta(minutes=8, seconds=1)


def test_a_message_with_no_events_has_an_empty_history(ledger, spark):
    assert message_history(message_id="nobody") == []
    lake_history_compact_if_due(force=True, spark=spark)
    assert message_history(message_id="nobody") == []


def test_several_messages_are_read_from_their_bucket_files_at_once(ledger, spark):
    # As the refresh reads the messages a few changes touched.
    generation = lake_history_compact_if_due(force=True, spark=spark)
    directories = [(lake().path(generation.path), generation.buckets)]

    rows = read_messages(directories, ["c", "a", "nobody", "a"]).to_pylist()

    def key(row):
        return (row["message_id"], row["epoch"], row["step"])

    assert sorted(rows, key=key) == sorted(every_event("a") + every_event("c"), key=key)


def test_a_file_gone_from_a_generation_is_an_error_not_an_empty_history(ledger, spark):
    generation = lake_history_compact_if_due(force=True, spark=spark)
    (lake().root / generation.path / "bucket-00000.parquet").unlink()

    with pytest.raises(FileNotFoundError):
        message_history(message_id="a")


def test_an_empty_lake_has_nothing_to_compact(db, lake_root, spark):
    assert lake_history_compact_if_due(force=True, spark=spark) is None
    assert message_history(message_id="a") == []


def test_compaction_waits_until_enough_commits_are_outstanding(ledger, spark, settings):
    settings.HISTORY_COMPACT_AFTER_COMMITS = 5
    assert lake_history_compact_if_due(spark=spark) is None
    fifth = commit([event("b", 9, 1, "DLNG", "DLVD")])
    assert lake_history_compact_if_due(spark=spark).covers_upto == fifth.id


def test_a_new_generation_absorbs_the_newest_ones_of_its_size_class_or_smaller():
    # Classes are powers of 8: 1-7 rows, 8-63, 64-511, 512-4095...
    assert merge_plan([], 100) == 0
    assert merge_plan([5000], 100) == 1  # a larger class: kept
    assert merge_plan([5000, 100], 100) == 1  # the same class: absorbed
    assert merge_plan([5000, 300, 100], 100) == 1  # 100 + 300 is still of that class
    assert merge_plan([3000, 400, 100], 100) == 0  # 600 climbs to the next class, 3000's
    assert merge_plan([5000, 400, 100], 100) == 1  # ... which is not 5000's
    assert merge_plan([70, 6], 5) == 1  # 5 absorbs 6 and climbs to 11, short of 70's class
    assert merge_plan([70, 60], 5) == 2  # a larger class: kept


def test_generations_merge_as_they_grow_and_the_history_stays_the_same(ledger, spark):
    expected = {}
    for k in range(3):
        # Each fold is of the same size: the second absorbs the first, and so on, as a counter
        # carries; the history never changes.
        commit([event(f"m{k}-{i}", 10 + k, i, None, "TBDL") for i in range(10)])
        lake_history_compact_if_due(force=True, spark=spark)
        expected |= {m: every_event(m) for m in [*ledger, f"m{k}-3"]}
        assert histories(expected) == expected

    live = LakeCommit.objects.filter(dataset="history", retired=False)
    assert live.count() == 1  # 11 + 10 + 10 + 10 rows: each fold met a generation of its class
    assert live.get().row_count == 41
    assert LakeCommit.objects.filter(dataset="history", retired=True).count() == 2


def test_a_generation_is_spread_over_buckets_sorted_by_message_in_row_groups(
    db, lake_root, spark, settings
):
    settings.REFRESH_ON_COMMIT = False
    ids = [f"msg-{i:05d}" for i in range(12_000)]
    commit([event(m, 1, 0, None, "TBDL") for m in reversed(ids)])
    commit([event(m, 2, 1, "TBDL", "DLNG") for m in ids[::2]])

    generation = lake_history_compact_if_due(force=True, spark=spark)

    assert (generation.row_count, generation.buckets) == (18_000, 2)  # 16,384 rows a file
    for bucket in range(2):
        parquet = pq.ParquetFile(lake_root / generation.path / f"bucket-{bucket:05d}.parquet")
        groups = [
            parquet.metadata.row_group(i).num_rows for i in range(parquet.metadata.num_row_groups)
        ]
        assert set(groups[:-1]) == {GROUP_ROWS} and 0 < groups[-1] <= GROUP_ROWS
        held = parquet.read(columns=["message_id", "epoch"]).to_pylist()
        assert held == sorted(held, key=lambda r: (r["message_id"], r["epoch"]))
        assert {bucket_of(r["message_id"], 2) for r in held} == {bucket}
    assert bucket_path(lake_root / generation.path, ids[4], 2).exists()
    assert message_history(message_id=ids[4]) == every_event(ids[4])


def test_a_compaction_that_finds_the_lake_changed_commits_nothing(ledger, spark):
    fold = lake_history_fold(force=True, spark=spark)
    # Another compaction got there first.
    assert lake_history_compact_if_due(force=True, spark=spark) is not None

    assert lake_history_fold_commit(fold) is None
    assert LakeCommit.objects.filter(dataset="history").count() == 1
    assert not (lake().root / fold.path).exists()


def test_merged_generations_are_deleted_after_the_grace_period(ledger, spark, settings):
    first = lake_history_compact_if_due(force=True, spark=spark)
    commit([event(f"n-{i}", 20, i, None, "TBDL") for i in range(11)])
    second = lake_history_compact_if_due(force=True, spark=spark)
    assert LakeCommit.objects.get(id=first.id).retired

    assert lake_history_dirs_delete() == 0  # a reader may still be reading it
    settings.PURGE_GRACE_SECONDS = 0
    assert lake_history_dirs_delete() == 1
    assert not (lake().root / first.path).exists()
    assert not LakeCommit.objects.filter(id=first.id).exists()
    assert (lake().root / second.path).exists()
