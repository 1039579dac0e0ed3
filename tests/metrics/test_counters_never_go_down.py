"""The delivery counters sum every run that ever finished: folding old runs into the totals, and
forgetting their rows (runs_forget), leaves every value where it was."""

from datetime import timedelta

import pytest
from django.utils import timezone

from console.delivery.models import DeliveryRun
from console.runs.models import RunFold
from console.runs.services import runs_forget
from tests.metrics.conftest import scrape, value

pytestmark = pytest.mark.django_db

COUNTERS = [
    ("antidote_delivery_attempts_total", {"outcome": "DLVD"}),
    ("antidote_delivery_attempts_total", {"outcome": "NDLV"}),
    ("antidote_delivery_runs_total", {"status": "committed"}),
    ("antidote_delivery_runs_total", {"status": "crashed"}),
    ("antidote_delivery_run_duration_seconds_count", {}),
    ("antidote_delivery_run_duration_seconds_sum", {}),
    ("antidote_delivery_run_duration_seconds_bucket", {"le": "5.0"}),
    ("antidote_delivery_run_duration_seconds_bucket", {"le": "60.0"}),
]


def _run(epoch, *, finished, took, status=DeliveryRun.COMMITTED, **outcomes):
    return DeliveryRun.objects.create(
        epoch=epoch,
        status=status,
        started_at=finished - timedelta(seconds=took),
        heartbeat_at=finished,
        finished_at=finished,
        recovered=True,
        outcomes={"states": outcomes} if outcomes else {},
    )


def _counters():
    scraped = scrape()
    return {
        (name, tuple(labels.items())): value(scraped, name, **labels) for name, labels in COUNTERS
    }


def test_old_runs_folded_then_forgotten_leave_the_counters_as_they_were(settings):
    settings.RUNS_KEEP_DAYS = 30
    now = timezone.now()
    _run(1, finished=now - timedelta(days=40), took=3, DLVD=5, NDLV=1)
    _run(2, finished=now - timedelta(days=35), took=40, status=DeliveryRun.CRASHED)
    _run(3, finished=now - timedelta(hours=3), took=2, DLVD=2)
    _run(4, finished=now - timedelta(minutes=1), took=100, DLVD=1, NDLV=4)
    first = _counters()

    forgotten = runs_forget()
    after = _counters()

    assert forgotten["delivery"] == 2
    assert DeliveryRun.objects.count() == 2
    assert after == first
    assert first[("antidote_delivery_attempts_total", (("outcome", "DLVD"),))] == 8
    assert first[("antidote_delivery_attempts_total", (("outcome", "NDLV"),))] == 5
    assert first[("antidote_delivery_runs_total", (("status", "crashed"),))] == 1
    assert first[("antidote_delivery_run_duration_seconds_count", ())] == 4
    assert first[("antidote_delivery_run_duration_seconds_sum", ())] == pytest.approx(145)
    assert first[("antidote_delivery_run_duration_seconds_bucket", (("le", "5.0"),))] == 2
    assert first[("antidote_delivery_run_duration_seconds_bucket", (("le", "60.0"),))] == 3
    # The scrape folded what finished more than an hour ago; the newest run is still read live.
    assert RunFold.objects.get().upto > now - timedelta(hours=1, minutes=1)


def test_a_run_that_finishes_after_a_scrape_counts_once(settings):
    now = timezone.now()
    _run(1, finished=now - timedelta(hours=2), took=1, DLVD=1)
    scrape()
    _run(2, finished=timezone.now(), took=1, DLVD=1)

    scraped = scrape()
    scrape()

    assert value(scraped, "antidote_delivery_attempts_total", outcome="DLVD") == 2
    assert value(scrape(), "antidote_delivery_attempts_total", outcome="DLVD") == 2
