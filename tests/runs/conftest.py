"""Runs of every kind as their apps leave them in the console DB, at moments a test chooses,
without running them: the runs page and /api/v1/runs only read these rows."""

from datetime import timedelta
from itertools import count

import pytest
from django.utils import timezone

from console.delivery.models import DeliveryRun
from console.lake.models import CompactionRun
from console.readmodels.models import RefreshRun
from console.retention.models import PurgeRun

# Text a delivery run's error may quote from a message: it must reach the page as text.
HOSTILE = '<script>alert("runs")</script><img src=x onerror=alert(1)>'

_epochs = count(1)


class Runs:
    """Makes runs of each kind, started `ago` (a timedelta) before now; a running one's
    heartbeat `beat` before now, a finished one's `took` after it started."""

    def __init__(self):
        self.now = timezone.now()

    def _times(self, ago, beat, took):
        started = self.now - ago
        if took is None:
            return {"started_at": started, "heartbeat_at": self.now - beat, "finished_at": None}
        return {
            "started_at": started,
            "heartbeat_at": started + took,
            "finished_at": started + took,
        }

    def delivery(self, *, ago, status="committed", beat=timedelta(0), took=None, **fields):
        if status != "running" and took is None:
            took = timedelta(seconds=4)
        return DeliveryRun.objects.create(
            epoch=next(_epochs),
            status=status,
            worker=fields.pop("worker", "spark-1:4242"),
            **self._times(ago, beat, took),
            **fields,
        )

    def refresh(self, *, ago, status="committed", beat=timedelta(0), took=None, **fields):
        if status != "running" and took is None:
            took = timedelta(seconds=9)
        return RefreshRun.objects.create(status=status, **self._times(ago, beat, took), **fields)

    def compaction(
        self, *, ago, status="committed", kind="state", beat=timedelta(0), took=None, **fields
    ):
        if status != "running" and took is None:
            took = timedelta(seconds=20)
        return CompactionRun.objects.create(
            kind=kind,
            status=status,
            worker=fields.pop("worker", "spark-1:4242"),
            **self._times(ago, beat, took),
            **fields,
        )

    def purge(self, *, ago, status="done", beat=timedelta(0), took=None, **fields):
        if status == "queued":
            purge = PurgeRun.objects.create(requested_by="system", status=status, **fields)
            PurgeRun.objects.filter(id=purge.id).update(created_at=self.now - ago)
            purge.refresh_from_db()
            return purge
        if status != "running" and took is None:
            took = timedelta(minutes=3)
        return PurgeRun.objects.create(
            requested_by="system",
            status=status,
            worker=fields.pop("worker", "spark-1:4242:ab12cd34"),
            **self._times(ago, beat, took),
            **fields,
        )


@pytest.fixture
def runs(db):
    return Runs()


@pytest.fixture
def world(runs, settings):
    """One run of each kind and state the page shows differently, LEASE_SECONDS 120. Made in
    the order they started, as their apps make them (each kind's ids follow its start times)."""
    settings.LEASE_SECONDS = 120
    m = timedelta(minutes=1)
    made = {}
    # Finished, the oldest first.
    made["full"] = runs.refresh(ago=80 * m, status="failed", full=True, upto_commit=5, error="boom")
    made["failed"] = runs.delivery(
        ago=70 * m, status="failed", queues=["orders"], error=f"ValueError: {HOSTILE}"
    )
    made["purged"] = runs.purge(ago=60 * m, events_upto=5, total=25, queue="")
    made["skipped"] = runs.compaction(
        ago=50 * m,
        status="skipped",
        kind="history",
        covers_upto=6,
        rows=300,
        note="the lake changed while it folded (a purge, or another compaction): not committed",
    )
    made["compacted"] = runs.compaction(ago=40 * m, covers_upto=7, commits=20, rows=1200)
    made["refreshed"] = runs.refresh(ago=30 * m, from_commit=3, upto_commit=7, changed=15)
    made["delivered"] = runs.delivery(
        ago=20 * m,
        queues=["orders", "billing"],
        claimed=12,
        outcomes={"claimed": 12, "states": {"DLVD": 9, "WAIT": 2, "NDLV": 1}},
    )
    # In progress: a delivery run whose worker died 10 minutes ago (stuck), a refresh running
    # for 10 minutes that still beats (slow), a preview waiting for a worker, and a compaction
    # just started.
    made["stuck"] = runs.delivery(
        ago=12 * m, status="running", beat=10 * m, queues=["orders"], claimed=40
    )
    made["slow"] = runs.refresh(
        ago=10 * m, status="running", beat=timedelta(seconds=3), from_commit=7, upto_commit=9
    )
    made["queued"] = runs.purge(ago=2 * m, status="queued", dry_run=True, queue="orders")
    made["fresh"] = runs.compaction(
        ago=timedelta(seconds=30), status="running", kind="history", covers_upto=9, commits=2
    )
    return made
