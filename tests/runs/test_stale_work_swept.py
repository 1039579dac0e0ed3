"""Work whose worker died is declared failed by the sweeper, not left running for ever: a
refresh, a counts check, a compaction (a delivery run's messages go back by R7 besides)."""

from datetime import timedelta

from django.utils import timezone

from console.delivery.tasks import sweep_leases_task
from console.lake.models import CompactionRun
from console.readmodels.models import CountsCheck, RefreshRun


def check(*, beat):
    now = timezone.now()
    return CountsCheck.objects.create(
        actor="system", started_at=now - timedelta(minutes=10), heartbeat_at=now - beat
    )


def test_the_sweeper_declares_dead_work_failed_and_leaves_live_work_alone(
    transactional_db, runs, settings, lake_root
):
    # Transactional: the sweeper closes old connections first, as a task does.
    settings.LEASE_SECONDS = 120
    minutes = timedelta(minutes=1)
    dead = [
        runs.refresh(ago=10 * minutes, status="running", beat=5 * minutes),
        runs.compaction(ago=10 * minutes, status="running", beat=5 * minutes),
        check(beat=5 * minutes),
    ]
    live = [
        runs.compaction(ago=10 * minutes, status="running", kind="history", beat=minutes / 6),
        check(beat=minutes / 6),
    ]

    sweep_leases_task()

    for row in dead:
        row.refresh_from_db()
        assert (row.status, "lease expired" in row.error) == ("failed", True), row
    for row in live:
        row.refresh_from_db()
        assert row.status == "running", row
    assert not RefreshRun.objects.filter(status="running").exists()
    assert CompactionRun.objects.filter(status="running").count() == 1
