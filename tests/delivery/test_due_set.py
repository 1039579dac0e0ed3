"""Issue 11: a run reads what is due, not the lake. Compaction keeps an open snapshot (the messages
that are not final) beside the state snapshot; a run folds it with the events after it, and reads
the message rows of the due messages alone."""

import shutil
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from console.delivery.execution import delivery_run
from console.lake.execution import lake_state_compact_if_due
from console.lake.models import LakeCommit
from console.lake.selectors import lake_due_inputs
from console.lake.services import lake
from tests.delivery.conftest import both_paths
from workers.engine import states as S
from workers.jobs.delivery import write_bodies
from workers.lake.schema import MESSAGE_SCHEMA


def _snapshot(dataset):
    commit = LakeCommit.objects.get(dataset=dataset, retired=False)
    rows = pq.read_table(lake().path(commit.path)).to_pylist()
    return commit, {r["message_id"]: r["to_state"] for r in rows}


def _delivered_once_and_compacted(engine, bodies):
    """`bodies` ingested into orders (a transient failure waits a minute, a permanent one is
    quarantined at once), delivered once, and the lake compacted. Their ids."""
    engine.queue(max_failed_deliveries=0, backoff_delays=[60])
    ids = engine.ingest("orders", bodies)
    engine.deliver()
    lake_state_compact_if_due(force=True, spark=engine.spark)
    return ids


@pytest.mark.spark
def test_compaction_keeps_an_open_snapshot_of_the_messages_that_are_not_final(engine):
    engine.queue(max_failed_deliveries=0, backoff_delays=[60])
    ids = engine.ingest("orders", ["ok", "transient", "permanent"])
    engine.deliver()

    state = lake_state_compact_if_due(force=True, spark=engine.spark)

    opened, rows = _snapshot("open")
    assert rows == {ids[1]: S.WAIT, ids[2]: S.NDLV}
    assert opened.covers_upto == state.covers_upto
    inputs = lake_due_inputs()
    assert (inputs.dataset, inputs.snapshot_id, inputs.event_paths) == ("open", opened.id, [])


@pytest.mark.spark
@both_paths
def test_the_next_open_snapshot_is_folded_from_the_last_one_and_the_new_events(engine):
    ids = _delivered_once_and_compacted(engine, ["ok", "transient", "permanent"])
    first, _ = _snapshot("open")
    late = engine.ingest("orders", {"late-ok": "ok", "late-wait": "transient"})
    engine.later(minutes=2)
    engine.deliver()

    lake_state_compact_if_due(force=True, spark=engine.spark)

    _, rows = _snapshot("open")
    assert rows == {ids[1]: S.WAIT, ids[2]: S.NDLV, late[1]: S.WAIT}
    assert LakeCommit.objects.get(id=first.id).retired
    _, state = _snapshot("state")
    assert state[late[0]] == state[ids[0]] == S.DLVD


@pytest.mark.spark
@both_paths
def test_a_run_reads_the_open_snapshot_not_the_state_snapshot(engine):
    ids = _delivered_once_and_compacted(engine, ["ok", "transient"])
    # The whole state's snapshot gone from under the run: it does not read it.
    state = LakeCommit.objects.get(dataset="state", retired=False)
    shutil.rmtree(lake().path(state.path))
    new = engine.ingest("orders", {"new": "ok"})
    engine.later(minutes=2)

    run = engine.deliver()

    assert run.claimed == 2
    assert engine.state(ids[1])["delivery_count"] == 2
    assert engine.state(new[0])["state"] == S.DLVD


@pytest.mark.spark
@both_paths
def test_a_lake_without_an_open_snapshot_yet_is_read_whole(engine):
    ids = _delivered_once_and_compacted(engine, ["ok", "transient"])
    # As a lake compacted before open snapshots existed.
    LakeCommit.objects.filter(dataset="open").delete()
    assert lake_due_inputs().dataset == "state"
    engine.later(minutes=2)

    assert engine.deliver().claimed == 1
    assert engine.state(ids[1])["delivery_count"] == 2
    lake_state_compact_if_due(force=True, spark=engine.spark)
    assert _snapshot("open")[1] == {ids[1]: S.WAIT}


def _messages(rows):
    at = datetime(2026, 3, 1, tzinfo=UTC)
    return pa.Table.from_pylist(
        [
            {"message_id": mid, "version": version, "queue": "orders", "body": body.encode(),
             "body_sha256": "", "body_size": len(body), "content_type": "text/plain",
             "headers": "{}", "conversation_id": None, "sender": None, "enqueued_at": at}
            for mid, version, body in rows
        ],
        schema=MESSAGE_SCHEMA,
    )  # fmt: skip


def test_only_the_due_messages_rows_are_read_every_version_of_them(tmp_path):
    first, second = tmp_path / "c1", tmp_path / "c2"
    first.mkdir()
    second.mkdir()
    rows = [(f"m{i:04d}", 1, f"body {i}") for i in range(1000)]
    pq.write_table(_messages(rows), first / "part-0.parquet", row_group_size=50)
    pq.write_table(_messages([("m0500", 2, "edited")]), second / "part-0.parquet")

    written = write_bodies(
        [str(first), str(second)], ["m0007", "m0500", "zz"], str(tmp_path / "out")
    )

    found = pq.read_table(tmp_path / "out").select(["message_id", "version", "body"])
    assert written == 3
    assert found.to_pylist() == [
        {"message_id": "m0007", "version": 1, "body": b"body 7"},
        {"message_id": "m0500", "version": 1, "body": b"body 500"},
        {"message_id": "m0500", "version": 2, "body": b"edited"},
    ]


@pytest.mark.spark
def test_a_small_run_starts_no_spark_job(engine, settings, monkeypatch):
    settings.DELIVERY_LOCAL_MAX = 1000
    engine.queue()
    ids = engine.ingest("orders", ["ok", "ok"])

    def no_spark(*args, **kwargs):
        raise AssertionError("a Spark job was started")

    monkeypatch.setattr("console.spark.spark_from_settings", no_spark)
    run = delivery_run(queues=["orders"], now=engine.now, fixed_clock=True)

    assert run.outcomes["states"] == {S.DLVD: 2}
    assert [engine.transitions(m)[-1] for m in ids] == [(S.DLNG, S.DLVD)] * 2


@pytest.mark.spark
def test_a_run_with_more_due_messages_than_the_local_maximum_is_a_spark_job(
    engine, settings, monkeypatch
):
    settings.DELIVERY_LOCAL_MAX = 1
    engine.queue()
    engine.ingest("orders", ["ok", "ok"])
    jobs = []
    monkeypatch.setattr("console.spark.spark_from_settings", lambda: jobs.append(1) or engine.spark)

    run = delivery_run(queues=["orders"], now=engine.now, fixed_clock=True)

    assert (run.outcomes["states"], jobs) == ({S.DLVD: 2}, [1])


def _state_rows(directory, rows):
    """Write events-like rows [(id, epoch, step, to_state, next_attempt_at)] into a directory."""
    from workers.lake.schema import EVENT_SCHEMA

    directory.mkdir()
    table = pa.Table.from_pylist(
        [
            {"message_id": mid, "epoch": epoch, "step": step, "to_state": to, "queue": "orders",
             "next_attempt_at": at, "delivery_count": 0, "body_version": 1}
            for mid, epoch, step, to, at in rows
        ],
        schema=EVENT_SCHEMA,
    )  # fmt: skip
    pq.write_table(table, directory / "part-0.parquet")
    return str(directory)


def test_the_local_due_set_is_each_messages_latest_row_by_epoch_and_step(tmp_path):
    from workers.jobs.delivery_local import due_rows

    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    soon, later = datetime(2026, 3, 1, 11, tzinfo=UTC), datetime(2026, 3, 1, 13, tzinfo=UTC)
    snapshot = _state_rows(
        tmp_path / "open",
        [("tbdl", 1, 1, S.TBDL, None), ("wait-due", 1, 2, S.WAIT, soon),
         ("wait-later", 1, 3, S.WAIT, later), ("ndlv", 5, 4, S.NDLV, None),
         ("taken", 1, 5, S.TBDL, None)],
    )  # fmt: skip
    events = _state_rows(
        tmp_path / "events",
        # An older writer's event committed after the snapshot does not outrank its row; a newer
        # one does.
        [("ndlv", 2, 1, S.TBDL, None), ("taken", 3, 1, S.DLNG, None), ("new", 3, 2, S.TBDL, None)],
    )  # fmt: skip

    due = due_rows([snapshot], [events], queues=["orders"], now=now)

    assert sorted(due.column("message_id").to_pylist()) == ["new", "tbdl", "wait-due"]
