"""The purges' sweeper: tasks may be lost, purges may not. It hands queued purges that waited
over a minute, and running ones whose heartbeat stopped, to the broker again (at most once a
minute each), gives up on one whose worker died MAX_ATTEMPTS times, and deletes the directories
purges swapped out, and the history generations compactions merged away, once their grace
period is over."""

from datetime import timedelta

import pytest
from django.utils import timezone

from console.audit.models import AuditEntry
from console.lake.models import LakeCommit
from console.retention.execution import purge_dirs_delete, purges_sweep
from console.retention.models import PurgeRun
from tests.sweeps import SweeperTests

pytestmark = pytest.mark.django_db


class TestThePurgesSweeper(SweeperTests):
    model = PurgeRun
    sweep = staticmethod(purges_sweep)
    finished_statuses = (PurgeRun.DONE, PurgeRun.FAILED)
    given_up_fields = {"dry_run": False}

    @pytest.fixture
    def run_fields(self):
        return {"requested_by": "admin", "dry_run": True}

    def tasks(self):
        from console.retention.tasks import purge_task, purges_sweep_task

        return purge_task, purges_sweep_task

    def assert_given_up_audited(self, run):
        entry = AuditEntry.objects.get()
        assert (entry.action, entry.actor, entry.target_id) == (
            "retention.failed",
            "admin",
            str(run.id),
        )

    def test_only_one_purge_may_be_queued_or_running_but_previews_may_run_beside_it(self, make):
        from django.db import IntegrityError, transaction

        make(PurgeRun.RUNNING, dry_run=False)
        make(PurgeRun.QUEUED, dry_run=True)
        make(PurgeRun.DONE, dry_run=False)

        with pytest.raises(IntegrityError), transaction.atomic():
            make(PurgeRun.QUEUED, dry_run=False)

    def test_old_directories_are_deleted_once_the_grace_period_is_over(
        self, make, lake_root, now, settings
    ):
        settings.PURGE_GRACE_SECONDS = 3600
        old = lake_root / "events" / "20260301" / "old"
        old.mkdir(parents=True)
        (old / "part-00000.parquet").write_bytes(b"not really parquet")
        purge = make(PurgeRun.DONE, dry_run=False)
        PurgeRun.objects.filter(id=purge.id).update(
            finished_at=now - timedelta(seconds=3599), pending_dirs=["events/20260301/old"]
        )

        assert purge_dirs_delete(now=now) == 0
        assert old.exists()

        assert purge_dirs_delete(now=now + timedelta(seconds=2)) == 1
        assert not old.exists()
        assert PurgeRun.objects.get(id=purge.id).dirs_deleted_at == now + timedelta(seconds=2)
        assert purge_dirs_delete(now=now + timedelta(days=1)) == 0

    def test_merged_history_generations_are_deleted_once_the_grace_period_is_over(
        self, delays, lake_root, now, settings
    ):
        # Merged away by a compaction an hour ago, and no compaction since to delete them: they may
        # hold messages purged meanwhile.
        settings.PURGE_GRACE_SECONDS = 3600
        commits = {}
        for name, seconds in (("merged", 3601), ("recent", 60)):
            folder = lake_root / "history" / "20260301" / name
            folder.mkdir(parents=True)
            (folder / "bucket-00000.parquet").write_bytes(b"not really parquet")
            commits[name] = LakeCommit.objects.create(
                dataset="history",
                path=f"history/20260301/{name}",
                row_count=1,
                idempotency_key=name,
                retired=True,
                retired_at=now - timedelta(seconds=seconds),
            )

        purges_sweep(enqueue=delays.append, now=now)

        assert not (lake_root / commits["merged"].path).exists()
        assert not LakeCommit.objects.filter(id=commits["merged"].id).exists()
        assert (lake_root / commits["recent"].path).exists()

    def test_the_hold_on_the_lake_of_a_purge_that_is_over_is_let_go_and_an_active_ones_kept(
        self, make, delays, now, lake_root
    ):
        # A purge killed between its commit and its own release held the compactions off the lake
        # until its time limit (found by the soak).
        from console.lake.models import LakeRewrite

        over = make(PurgeRun.DONE, dry_run=False)
        active = make(PurgeRun.RUNNING, enqueued=0, heartbeat=0, dry_run=False)
        until = now + timedelta(hours=1)
        for purge in (over, active):
            LakeRewrite.objects.create(holder=f"purge:{purge.id}", until=until)
        LakeRewrite.objects.create(holder="someone else", until=until)

        purges_sweep(enqueue=delays.append, now=now)

        held = set(LakeRewrite.objects.values_list("holder", flat=True))
        assert held == {f"purge:{active.id}", "someone else"}

    def test_a_purge_that_records_its_end_lets_go_of_the_lake_in_the_same_transaction(self, make):
        from console.lake.models import LakeRewrite
        from console.retention.execution import _finish

        purge = make(PurgeRun.RUNNING, heartbeat=0, dry_run=False)
        LakeRewrite.objects.create(holder=f"purge:{purge.id}", until=timezone.now())

        assert _finish(purge, purge.worker, status=PurgeRun.FAILED, error="killed")

        assert not LakeRewrite.objects.exists()


def test_the_purge_runs_on_the_spark_worker_daily_and_the_sweep_with_the_lease_sweep(settings):
    from workers.celery import app

    app.finalize()  # as a worker or beat does when it starts: the schedule is made then
    assert app.conf.task_routes["workers.tasks.purge_task"]["queue"] == "spark"
    assert "workers.tasks.purges_sweep_task" not in app.conf.task_routes  # default queue
    daily = app.conf.beat_schedule["purge-retention"]
    assert daily["task"] == "workers.tasks.purge_task"
    assert daily["schedule"] == float(settings.PURGE_INTERVAL_SECONDS) == 86400.0
    sweep = app.conf.beat_schedule["sweep-purges"]
    assert sweep["task"] == "workers.tasks.purges_sweep_task"
    assert sweep["schedule"] == app.conf.beat_schedule["sweep-leases"]["schedule"]
