"""Compactions leave a record (console.lake.models.CompactionRun): running, with a heartbeat,
while Spark folds; committed with what it made, skipped when the lake changed under it, failed
with the error (which the caller still gets), and declared failed once its heartbeat stopped.
What the compactions do is unchanged (tests/delivery, tests/retention)."""

import time
from datetime import timedelta

import pytest
from django.db import IntegrityError
from django.utils import timezone

from console.lake import execution
from console.lake.execution import (
    lake_compactions_stale_fail,
    lake_history_compact_if_due,
    lake_history_fold,
    lake_history_fold_commit,
    lake_state_compact_if_due,
)
from console.lake.models import CompactionRun, LakeCommit
from tests.retention.conftest import Shore
from workers.jobs import history as history_job
from workers.jobs import state as state_job
from workers.jobs.history import HistoryFoldResult


@pytest.fixture
def shore(transactional_db, lake_root, spark, settings):
    settings.REFRESH_ON_COMMIT = False
    shore = Shore(spark)
    shore.queue()
    shore.ingest("orders", {"m-1": "a", "m-2": "b", "m-3": "c"})
    shore.live({"m-1": "DLVD", "m-2": "NDLV", "m-3": "WAIT"})
    return shore


def _events():
    return list(
        LakeCommit.objects.filter(dataset="events").order_by("id").values_list("id", flat=True)
    )


def _event_rows():
    return sum(LakeCommit.objects.filter(dataset="events").values_list("row_count", flat=True))


def _record(run):
    return {f: getattr(run, f) for f in ("kind", "status", "covers_upto", "commits", "rows")}


def _seen_while_running(monkeypatch, module, name, *, wait=0.0):
    """Wrap `module.name` (a step of the compaction) to note its record as it was then."""
    seen = []
    original = getattr(module, name)

    def step(*args, **kwargs):
        time.sleep(wait)  # long enough for a heartbeat
        seen.append(CompactionRun.objects.filter(status=CompactionRun.RUNNING).latest("id"))
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, step)
    return seen


@pytest.mark.spark
def test_a_state_compaction_is_running_with_a_heartbeat_while_it_folds_then_committed(
    shore, monkeypatch, settings
):
    settings.HEARTBEAT_SECONDS = 1
    events = _events()
    seen = _seen_while_running(monkeypatch, state_job, "open_state", wait=1.6)

    snapshot = lake_state_compact_if_due(force=True, spark=shore.spark)

    (running,) = seen
    assert _record(running) == {
        "kind": "state",
        "status": "running",
        "covers_upto": events[-1],
        "commits": len(events),
        "rows": None,
    }
    assert running.heartbeat_at > running.started_at  # it beat while Spark folded
    assert running.worker and running.finished_at is None
    run = CompactionRun.objects.get()
    assert _record(run) == _record(running) | {"status": "committed", "rows": 3}
    assert (run.lake_commit, run.error, run.note) == (snapshot.id, "", "")
    assert run.started_at < run.finished_at == run.heartbeat_at


@pytest.mark.spark
def test_a_history_compaction_is_committed_and_one_that_finds_the_lake_changed_is_skipped(
    shore, monkeypatch
):
    events, rows = _events(), _event_rows()
    seen = _seen_while_running(monkeypatch, history_job, "run_history_fold")
    fold = lake_history_fold(force=True, spark=shore.spark)
    # Another compaction folds the same commits first: the first one's would fold them twice.
    generation = lake_history_compact_if_due(force=True, spark=shore.spark)

    assert lake_history_fold_commit(fold) is None

    assert [_record(r) for r in seen] == [
        {"kind": "history", "status": "running", "covers_upto": events[-1],
         "commits": len(events), "rows": None}
    ] * 2  # fmt: skip
    dropped, committed = CompactionRun.objects.order_by("id")
    assert (dropped.id, committed.id) == (fold.run_id, seen[1].id)
    assert _record(committed) == _record(seen[1]) | {"status": "committed", "rows": rows}
    assert committed.lake_commit == generation.id
    assert _record(dropped) == _record(seen[0]) | {"status": "skipped", "rows": rows}
    assert dropped.note == execution.LAKE_CHANGED
    assert (dropped.lake_commit, dropped.error) == (None, "")
    assert dropped.finished_at is not None


def test_a_failed_compaction_is_recorded_then_raised_as_it_was(shore, monkeypatch):
    def lost(*args, **kwargs):
        raise RuntimeError("executor lost")

    monkeypatch.setattr(state_job, "extract_state", lost)
    monkeypatch.setattr(history_job, "run_history_fold", lost)

    with pytest.raises(RuntimeError, match="executor lost"):
        lake_state_compact_if_due(force=True, spark=shore.spark)
    with pytest.raises(RuntimeError, match="executor lost"):
        lake_history_compact_if_due(force=True, spark=shore.spark)

    assert list(CompactionRun.objects.order_by("id").values_list("kind", "status", "error")) == [
        ("state", "failed", "RuntimeError: executor lost"),
        ("history", "failed", "RuntimeError: executor lost"),
    ]
    assert not CompactionRun.objects.filter(finished_at__isnull=True).exists()
    assert not LakeCommit.objects.filter(dataset__in=["state", "history"]).exists()


def test_a_failure_in_the_commits_transaction_is_recorded_after_it_rolled_back(shore, monkeypatch):
    monkeypatch.setattr(
        history_job, "run_history_fold", lambda spark, params: HistoryFoldResult(rows=8, files=2)
    )
    fold = lake_history_fold(force=True, spark=shore.spark)

    def refused(**kwargs):
        raise IntegrityError("duplicate key value violates unique constraint")

    monkeypatch.setattr(execution, "lake_commit_record", refused)
    with pytest.raises(IntegrityError):
        lake_history_fold_commit(fold)

    run = CompactionRun.objects.get()
    assert (run.id, run.status) == (fold.run_id, "failed")
    assert run.error == "IntegrityError: duplicate key value violates unique constraint"


def test_a_compaction_that_is_not_due_leaves_no_record(shore, settings):
    settings.COMPACT_AFTER_COMMITS = settings.HISTORY_COMPACT_AFTER_COMMITS = 50

    assert lake_state_compact_if_due(spark=shore.spark) is None
    assert lake_history_compact_if_due(spark=shore.spark) is None

    assert not CompactionRun.objects.exists()


def _run(status, *, beat_ago=timedelta(0)):
    now = timezone.now()
    return CompactionRun.objects.create(
        kind="state", status=status, started_at=now - beat_ago, heartbeat_at=now - beat_ago
    )


def test_a_compaction_whose_heartbeat_stopped_is_declared_failed_by_the_next_one(
    shore, monkeypatch, settings
):
    settings.LEASE_SECONDS = 120
    dead = _run("running", beat_ago=timedelta(minutes=10))
    alive = _run("running", beat_ago=timedelta(seconds=30))
    monkeypatch.setattr(state_job, "extract_state", lambda *a: 1 / 0)

    with pytest.raises(ZeroDivisionError):
        lake_state_compact_if_due(force=True, spark=shore.spark)

    dead.refresh_from_db()
    assert dead.status == "failed" and dead.finished_at is not None
    assert dead.error == f"lease expired: no heartbeat since {dead.heartbeat_at.isoformat()}"
    assert CompactionRun.objects.get(id=alive.id).status == "running"
    # A sweeper may ask too; there is nothing left to declare.
    assert lake_compactions_stale_fail() == 0


def test_only_the_newest_compactions_are_kept_and_those_in_progress(shore, monkeypatch):
    monkeypatch.setattr(execution, "COMPACTIONS_KEPT", 3)
    running = _run("running")  # the oldest, but in progress: never forgotten
    finished = [
        _run(status) for status in ("committed", "skipped", "failed", "committed", "failed")
    ]
    monkeypatch.setattr(state_job, "extract_state", lambda *a: 1 / 0)

    with pytest.raises(ZeroDivisionError):
        lake_state_compact_if_due(force=True, spark=shore.spark)

    new = CompactionRun.objects.order_by("-id").first()
    assert set(CompactionRun.objects.values_list("id", flat=True)) == {
        running.id,
        *(r.id for r in finished[-3:]),
        new.id,
    }
