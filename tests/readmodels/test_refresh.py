"""The refresh of the read models, end to end: real ingest, real delivery runs on the real Spark
session, then `read_models_refresh`, and the read models compared with what the lake says."""

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.db import transaction

from console.lake.models import LakeCommit
from console.lake.services import epoch_allocate, lake, lake_commit_record
from console.readmodels.execution import read_models_refresh
from console.readmodels.models import (
    FailureGroup,
    MessageIndex,
    QuarantineInflow,
    QueueStat,
    RefreshRun,
)
from tests.delivery.conftest import T0, Engine
from workers.lake.schema import EVENT_SCHEMA

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def engine(transactional_db, lake_root, spark, settings):
    settings.REFRESH_ON_COMMIT = False
    return Engine(spark)


def refresh(engine, *, full=False):
    return read_models_refresh(full=full, spark=engine.spark)


def index_rows():
    return {row["message_id"]: row for row in MessageIndex.objects.values()}


def reprocess(message_id, *, at):
    """An administrator's reprocess as the ledger records it (R13): NDLV -> TBDL, count reset."""
    history = lake().read_arrow(
        "events", [c.path for c in LakeCommit.objects.filter(dataset="events")]
    )
    latest = max(
        (r for r in history.to_pylist() if r["message_id"] == message_id),
        key=lambda r: (r["epoch"], r["step"]),
    )
    epoch = epoch_allocate(purpose="test reprocess")
    event = dict(
        latest,
        epoch=epoch,
        step=1,
        at=at,
        from_state="NDLV",
        to_state="TBDL",
        delivery_count=0,
        candidate=False,
        attempt=0,
        actor="admin",
        run_id=None,
        reason="reprocessed",
        exception_type=None,
        stack=None,
        queue_streak=None,
    )
    store = lake()
    path = store.write_arrow(
        pa.Table.from_pylist([event], schema=EVENT_SCHEMA), store.new_dir("events", "reprocess")
    )
    with transaction.atomic():
        lake_commit_record(
            dataset="events",
            path=path,
            row_count=1,
            idempotency_key=f"reprocess:{message_id}:{epoch}",
            epoch=epoch,
        )


def test_a_message_quarantined_by_a_run_appears_in_the_index_after_one_refresh_with_its_group(
    engine,
):
    engine.queue("orders")
    engine.ingest(
        "orders",
        {"bad-1": "permanent", "good-1": "ok"},
        sender="shop@example.test",
        conversation_id="c-1",
        content_type="text/plain",
    )
    engine.deliver()

    run = refresh(engine)

    assert run.status == RefreshRun.COMMITTED
    assert run.full is True
    rows = index_rows()
    assert list(rows) == ["bad-1"]
    row = rows["bad-1"]
    assert row["state"] == "NDLV"
    assert row["queue"] == "orders"
    assert row["original_queue"] == "orders"
    assert row["delivery_count"] == 1
    assert row["reason"] == "permanent failure: missing field: customer"
    assert row["exception_type"] == "PermanentFailure"
    assert row["sender"] == "shop@example.test"
    assert row["conversation_id"] == "c-1"
    assert row["content_type"] == "text/plain"
    assert row["body_size"] == len("permanent")
    assert row["body_version"] == 1
    assert row["body_path"] == LakeCommit.objects.get(dataset="messages").path
    assert row["first_failure_at"] == row["last_failure_at"] == T0
    assert row["updated_at"] == T0
    group = FailureGroup.objects.get(fingerprint=row["group_id"])
    assert group.queue == "orders"
    assert group.exception_type == "PermanentFailure"
    assert group.pattern == "permanent failure: missing field: customer"
    assert "test_" not in group.frames and "handlers_for_tests.py:scripted" in group.frames
    assert group.count == 1
    assert group.states == {"NDLV": 1}
    assert group.first_seen == group.last_seen == T0
    assert group.sample_message_id == "bad-1"
    assert "PermanentFailure" in group.sample_stack


def test_delivered_messages_that_never_failed_are_not_indexed_and_those_that_failed_are(engine):
    engine.queue("orders", handler="tests.handlers_for_tests.sequence")
    engine.ingest("orders", {"fine": "ok", "flaky": "t,ok"})
    engine.deliver_until_idle()

    refresh(engine)

    rows = index_rows()
    assert list(rows) == ["flaky"]
    assert rows["flaky"]["state"] == "DLVD"
    assert rows["flaky"]["exception_type"] == "ConnectionError"
    assert rows["flaky"]["first_failure_at"] == T0


def test_a_message_delivered_after_it_was_indexed_is_taken_out_of_the_index(engine):
    engine.queue("orders")
    engine.ingest("orders", {"m-1": "ok"})
    refresh(engine)
    assert index_rows()["m-1"]["state"] == "TBDL"

    engine.deliver()
    run = refresh(engine)

    assert index_rows() == {}
    assert run.changed == 1


def test_a_message_leaving_ndlv_is_updated_and_its_group_counts_it_in_its_new_state(engine):
    engine.queue("orders")
    engine.ingest("orders", {"bad-1": "permanent", "bad-2": "permanent"})
    engine.deliver()
    refresh(engine)

    reprocess("bad-1", at=T0 + timedelta(hours=1))
    refresh(engine)

    rows = index_rows()
    assert rows["bad-1"]["state"] == "TBDL"
    assert rows["bad-1"]["delivery_count"] == 0
    assert rows["bad-1"]["updated_at"] == T0 + timedelta(hours=1)
    assert rows["bad-1"]["group_id"] == rows["bad-2"]["group_id"]  # its last failure still
    group = FailureGroup.objects.get()
    assert group.count == 2
    assert group.states == {"NDLV": 1, "TBDL": 1}


def test_an_incremental_refresh_touches_only_the_affected_rows_and_moves_the_cursor(engine):
    engine.queue("orders")
    engine.ingest("orders", {"old": "permanent"})
    engine.deliver()
    first = refresh(engine)
    MessageIndex.objects.filter(message_id="old").update(reason="left alone")

    engine.ingest("orders", {"new": "permanent"})
    engine.deliver(at=T0 + timedelta(hours=1))
    second = refresh(engine)

    assert second.full is False
    assert second.from_commit == first.upto_commit
    assert second.upto_commit == LakeCommit.objects.filter(dataset="events").latest("id").id
    assert second.changed == 1
    rows = index_rows()
    assert rows["old"]["reason"] == "left alone"
    assert rows["new"]["state"] == "NDLV"
    assert FailureGroup.objects.get().count == 2


def test_a_full_refresh_gives_what_the_incremental_ones_gave(engine):
    engine.queue("orders", handler="tests.handlers_for_tests.sequence", max_failed_deliveries=2)
    engine.queue("payments")
    engine.ingest("orders", {"o-1": "t", "o-2": "t,ok", "o-3": "p", "o-4": "ok"})
    engine.deliver()
    refresh(engine)
    engine.ingest("payments", {"p-1": "permanent", "p-2": "transient", "p-3": "ok"})
    engine.deliver(at=T0 + timedelta(hours=2))
    refresh(engine)
    engine.deliver(at=T0 + timedelta(days=1))
    refresh(engine)
    incremental = (
        index_rows(),
        {g["fingerprint"]: g for g in FailureGroup.objects.values()},
        {s["queue"]: s["counts"] for s in QueueStat.objects.values()},
        sorted(QuarantineInflow.objects.values_list("queue", "hour", "flow", "count")),
    )

    run = refresh(engine, full=True)

    assert run.full is True
    full = (
        index_rows(),
        {g["fingerprint"]: g for g in FailureGroup.objects.values()},
        {s["queue"]: s["counts"] for s in QueueStat.objects.values()},
        sorted(QuarantineInflow.objects.values_list("queue", "hour", "flow", "count")),
    )
    assert full == incremental
    assert sorted(incremental[0]) == ["o-1", "o-2", "o-3", "p-1", "p-2"]


def test_failures_that_differ_only_in_ids_and_numbers_share_a_group_and_other_types_do_not(engine):
    engine.queue("orders", max_failed_deliveries=1)
    engine.ingest("orders", {"a": "order 12345", "b": "order 99", "c": "permanent"})
    engine.deliver()

    refresh(engine)

    rows = index_rows()
    assert rows["a"]["group_id"] == rows["b"]["group_id"] != rows["c"]["group_id"]
    groups = {g.fingerprint: g for g in FailureGroup.objects.all()}
    same = groups[rows["a"]["group_id"]]
    assert same.exception_type == "ValueError"
    assert same.pattern == "maximum failed deliveries reached (<n>): unexpected body 'order <n>'"
    assert same.count == 2
    assert same.states == {"NDLV": 2}
    assert groups[rows["c"]["group_id"]].count == 1


def test_queue_stats_count_every_message_of_every_queue_by_state(engine):
    engine.queue("orders")
    engine.queue("payments")
    engine.ingest("orders", {"o-1": "ok", "o-2": "permanent", "o-3": "transient"})
    engine.ingest("payments", {"p-1": "ok"})
    engine.deliver(queues=["orders"])

    refresh(engine)

    stats = {s.queue: s.counts for s in QueueStat.objects.all()}
    assert stats == {"orders": {"DLVD": 1, "NDLV": 1, "WAIT": 1}, "payments": {"TBDL": 1}}


def test_the_hourly_flows_are_counted_per_queue_and_hour_and_added_up(engine):
    engine.queue("orders")
    engine.ingest("orders", {"o-1": "permanent", "o-2": "permanent"})
    engine.deliver(at=T0 + timedelta(minutes=10))
    refresh(engine)
    engine.ingest("orders", {"o-3": "permanent"})
    engine.deliver(at=T0 + timedelta(minutes=50))
    engine.ingest("orders", {"o-4": "permanent"})
    engine.deliver(at=T0 + timedelta(hours=3))

    refresh(engine)

    inflow = sorted(
        QuarantineInflow.objects.filter(flow="quarantined").values_list("queue", "hour", "count")
    )
    assert inflow == [("orders", T0, 3), ("orders", T0 + timedelta(hours=3), 1)]
    flows = dict(
        QuarantineInflow.objects.filter(hour=T0).values_list("flow", "count")
    )  # a permanent failure is a failed attempt that quarantines
    assert flows == {"quarantined": 3, "failed": 3}


def test_a_second_refresh_with_nothing_new_changes_nothing(engine):
    engine.queue("orders")
    engine.ingest("orders", {"o-1": "permanent"})
    engine.deliver()
    refresh(engine)
    before = (index_rows(), list(FailureGroup.objects.values()), RefreshRun.objects.count())

    assert refresh(engine) is None

    after = (index_rows(), list(FailureGroup.objects.values()), RefreshRun.objects.count())
    assert after == before


def test_a_refresh_is_skipped_while_another_holds_the_lock_and_a_dead_one_is_taken_over(
    engine, settings
):
    engine.queue("orders")
    engine.ingest("orders", {"o-1": "permanent"})
    now = datetime.now(UTC)
    held = RefreshRun.objects.create(started_at=now, heartbeat_at=now)

    assert refresh(engine) is None

    RefreshRun.objects.filter(id=held.id).update(
        heartbeat_at=now - timedelta(seconds=settings.LEASE_SECONDS + 1)
    )
    run = refresh(engine)
    assert run.status == RefreshRun.COMMITTED
    held.refresh_from_db()
    assert held.status == RefreshRun.FAILED
    assert "lease expired" in held.error


def test_a_refresh_that_missed_three_heartbeats_loses_the_lock_and_one_that_beats_keeps_it(
    engine, settings
):
    # Not a delivery run's lease: a dead refresh holding the lock keeps the console still.
    settings.HEARTBEAT_SECONDS = 10
    settings.LEASE_SECONDS = 120
    engine.queue("orders")
    engine.ingest("orders", {"o-1": "permanent"})
    now = datetime.now(UTC)
    held = RefreshRun.objects.create(started_at=now, heartbeat_at=now - timedelta(seconds=25))

    assert refresh(engine) is None

    RefreshRun.objects.filter(id=held.id).update(heartbeat_at=now - timedelta(seconds=31))
    assert refresh(engine).status == RefreshRun.COMMITTED
    held.refresh_from_db()
    assert held.status == RefreshRun.FAILED


def test_the_refresh_command_runs_it_in_the_foreground(engine, capsys):
    engine.queue("orders")
    engine.ingest("orders", {"o-1": "permanent"})
    engine.deliver()

    call_command("refresh")
    call_command("refresh")

    out = capsys.readouterr().out
    assert "(full, up to commit" in out
    assert "nothing new to refresh" in out
    assert MessageIndex.objects.filter(state="NDLV").count() == 1


def test_a_commit_made_while_a_refresh_runs_is_folded_by_the_next_one_it_asks_for(
    engine, settings, monkeypatch
):
    # The commit's own request is skipped (debounced, or finding the lock of the refresh under
    # way): that refresh asks for the next as it ends, rather than leave it to beat's next tick.
    import workers.jobs.refresh
    from console.readmodels.tasks import browse_refresh_task

    engine.queue("orders")
    engine.ingest("orders", {"o-1": "permanent"})
    engine.deliver()
    refresh(engine)
    cache.clear()
    settings.REFRESH_ON_COMMIT = True
    # The spark worker, at once: each request runs a refresh.
    refreshed = []
    monkeypatch.setattr(browse_refresh_task, "delay", lambda: refreshed.append(refresh(engine)))
    job = workers.jobs.refresh.run_refresh
    meanwhile = []

    def with_a_commit_meanwhile(spark, params):
        if not meanwhile:
            meanwhile.append(engine.ingest("orders", {"o-2": "permanent"}))
        return job(spark, params)

    monkeypatch.setattr(workers.jobs.refresh, "run_refresh", with_a_commit_meanwhile)
    engine.ingest("orders", {"o-3": "permanent"})

    assert [run.status for run in refreshed] == [RefreshRun.COMMITTED] * 2
    assert {"o-2", "o-3"} <= set(index_rows())
