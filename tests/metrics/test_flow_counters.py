"""The quarantine's inflow and outflow counters count every message the hourly flows ever
counted: a purge takes its messages off the hours (QuarantineInflow) but not off the counters,
and a full refresh after it recounts the hours without changing them either."""

import pytest
from django.db.models import Sum

from console.readmodels.models import QuarantineInflow
from tests.metrics.conftest import scrape, value
from tests.retention.conftest import Shore

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def shore(transactional_db, lake_root, spark, settings):
    settings.REFRESH_ON_COMMIT = False  # the test refreshes itself
    return Shore(spark)


def _counted(scraped):
    return (
        value(scraped, "antidote_quarantine_inflow_total", queue="orders"),
        value(scraped, "antidote_quarantine_outflow_total", queue="orders"),
    )


def test_a_purge_leaves_the_flow_counters_where_they_were(shore):
    shore.queue("orders", retention_days=1)
    shore.ingest("orders", {m: m for m in ("n-1", "f-1", "e-1", "ok-1")})
    shore.live({"n-1": "NDLV", "f-1": "FAIL", "e-1": "ENDED", "ok-1": "DLVD"})
    shore.refresh()
    before = _counted(scrape())
    hours = QuarantineInflow.objects.filter(queue="orders", flow="quarantined")

    shore.purge()
    purged = _counted(scrape())
    shore.refresh(full=True)
    recounted = _counted(scrape())

    assert before == (3, 2)
    assert hours.aggregate(n=Sum("count"))["n"] == 1  # f-1 and e-1 are gone from the hours
    assert purged == before
    assert recounted == before
