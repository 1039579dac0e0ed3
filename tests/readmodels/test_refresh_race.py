"""Two refreshes racing: each events commit is folded once, whatever the order in which they read
and take the lock, and the database refuses a second fold of a commit (FoldedCommit) whatever a
later change to the code that lists them does."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, connection, transaction

import console.readmodels.execution as execution
import workers.jobs.refresh
from console.lake.models import LakeCommit
from console.readmodels.execution import read_models_refresh
from console.readmodels.models import FoldedCommit, QuarantineInflow, QueueStat, RefreshRun
from tests.delivery.conftest import T0, Engine

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# How long a thread waits for the other at a barrier before the test gives up on it: a bound
# on a hang, not a measure of speed.
PATIENCE = 300


@pytest.fixture
def engine(transactional_db, lake_root, spark, settings):
    settings.REFRESH_ON_COMMIT = False
    return Engine(spark)


def counts():
    return {s.queue: s.counts for s in QueueStat.objects.all()}


def delivered_flows():
    return sum(QuarantineInflow.objects.filter(flow="delivered").values_list("count", flat=True))


def in_thread(target, results, name):
    def run():
        try:
            results[name] = target()
        except Exception as exc:  # the test reads it
            results[name] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread


def test_a_refresh_that_starts_while_another_folds_never_folds_the_same_commits_again(
    engine, monkeypatch
):
    engine.queue("orders")
    engine.ingest("orders", {"a-1": "ok", "a-2": "ok"})
    engine.deliver()
    read_models_refresh(spark=engine.spark)
    # Delivered at first try: never in the index, counted in the queue's DLVD alone, which is
    # what a second fold of their commits counted twice.
    engine.ingest("orders", {"b-1": "ok", "b-2": "ok", "b-3": "ok"})
    engine.deliver(at=T0 + timedelta(hours=1))

    first_in_job, first_may_go = threading.Event(), threading.Event()
    second_read_cursor = threading.Event()
    job, cursor = workers.jobs.refresh.run_refresh, execution.read_models_folded_upto

    def held_in_its_job(spark, params):
        if threading.current_thread().name == "first":
            first_in_job.set()
            assert first_may_go.wait(PATIENCE)
        return job(spark, params)

    def cursor_then_wait():
        # The second refresh, wherever it reads its starting position, waits there until the
        # first one has committed: the interleaving that folded commits twice.
        position = cursor()
        if threading.current_thread().name == "second":
            second_read_cursor.set()
            assert first_done.wait(PATIENCE)
        return position

    first_done = threading.Event()
    monkeypatch.setattr(workers.jobs.refresh, "run_refresh", held_in_its_job)
    monkeypatch.setattr(execution, "read_models_folded_upto", cursor_then_wait)
    results = {}

    def first():
        try:
            return read_models_refresh(spark=engine.spark)
        finally:
            first_done.set()

    a = in_thread(first, results, "first")
    assert first_in_job.wait(PATIENCE)
    b = in_thread(lambda: read_models_refresh(spark=engine.spark), results, "second")
    # The second either read a position and waits for the first, or found the lock taken.
    for _ in range(PATIENCE * 10):
        if second_read_cursor.is_set() or not b.is_alive():
            break
        b.join(0.1)
    first_may_go.set()
    a.join(PATIENCE)
    b.join(PATIENCE)
    assert not a.is_alive() and not b.is_alive()
    monkeypatch.undo()
    assert not isinstance(results["first"], Exception), results["first"]
    assert not isinstance(results["second"], Exception), results["second"]
    # Whatever either left, the next refresh folds.
    read_models_refresh(spark=engine.spark)

    assert counts() == {"orders": {"DLVD": 5}}
    assert delivered_flows() == 5
    folded = list(FoldedCommit.objects.order_by("commit_id").values_list("commit_id", flat=True))
    events = list(
        LakeCommit.objects.filter(dataset="events").order_by("id").values_list("id", flat=True)
    )
    assert folded == events


def test_the_database_refuses_a_second_fold_of_an_events_commit(engine):
    engine.queue("orders")
    engine.ingest("orders", {"a-1": "ok"})
    engine.deliver()
    read_models_refresh(spark=engine.spark)
    commit = LakeCommit.objects.filter(dataset="events").latest("id")
    run = RefreshRun.objects.create(
        started_at=datetime.now(UTC), heartbeat_at=datetime.now(UTC), status="failed"
    )

    with pytest.raises(IntegrityError), transaction.atomic():
        FoldedCommit.objects.create(commit_id=commit.id, run_id=run.id)


def test_a_refresh_whose_position_went_back_is_refused_and_changes_no_count(engine):
    # The guard under the code: were a refresh ever to list commits that one before it folded
    # (here, a committed run's position put back by hand), its load is refused as a whole.
    engine.queue("orders")
    engine.ingest("orders", {"a-1": "ok", "a-2": "permanent"})
    engine.deliver()
    first = read_models_refresh(spark=engine.spark)
    engine.ingest("orders", {"b-1": "ok"})
    engine.deliver(at=T0 + timedelta(hours=1))
    read_models_refresh(spark=engine.spark)
    before = (counts(), delivered_flows())
    now = datetime.now(UTC)
    RefreshRun.objects.create(
        status=RefreshRun.COMMITTED,
        from_commit=first.upto_commit,
        upto_commit=first.upto_commit,
        started_at=now,
        heartbeat_at=now,
        finished_at=now,
    )
    LakeCommit.objects.filter(dataset="events").update(views_applied=False)

    with pytest.raises(execution.AlreadyFolded, match="already folded by refresh"):
        read_models_refresh(spark=engine.spark)

    refused = RefreshRun.objects.order_by("-id").first()
    assert refused.status == RefreshRun.FAILED
    assert "already folded by refresh" in refused.error
    assert (counts(), delivered_flows()) == before
