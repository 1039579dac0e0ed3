"""What /metrics says of the messages is what the dashboard says: the queues' counts by state
as of the last refresh, quarantined per queue, and the age of each queue's oldest quarantined
message from the index."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from console.browse.counts import dashboard_stats
from console.queues.models import Queue
from console.readmodels.oldest import quarantine_oldest_keep
from tests.browse.conftest import Index
from tests.metrics.conftest import scrape, value
from tests.readmodels.oldest_scenes import quarantined_behind_an_older_message

pytestmark = pytest.mark.django_db


@pytest.fixture
def index(lake_root):
    return Index()


def test_quarantined_per_queue_is_the_dashboards(index):
    index.stats("orders", NDLV=3, TBDL=4, DLVD=10)
    index.stats("refunds", NDLV=1, WAIT=2)
    index.stats("idle", DLVD=5)

    scraped = scrape()

    per_queue = dict(dashboard_stats()["per_queue"])
    for queue, counts in per_queue.items():
        counts = dict(counts)
        assert value(scraped, "antidote_quarantined", queue=queue) == counts.get("NDLV", 0)
        for state, n in counts.items():
            assert value(scraped, "antidote_messages", queue=queue, state=state) == n
    assert value(scraped, "antidote_quarantined", queue="orders") == 3
    assert value(scraped, "antidote_quarantined", queue="refunds") == 1
    assert ("antidote_quarantined", frozenset({("queue", "idle")})) in scraped


def test_the_oldest_quarantined_age_is_the_oldest_ndlv_of_its_queue(index):
    now = timezone.now()
    quarantined_behind_an_older_message(index, now, state="DLVD", older=timedelta(days=9))
    quarantine_oldest_keep()  # the refresh's task, as after the refresh that indexed them

    age = value(scrape(), "antidote_quarantine_oldest_age_seconds", queue="orders")

    assert 5 * 3600 <= age < 5 * 3600 + 60


def test_a_disabled_queue_says_1(index):
    index.queue("orders")
    index.queue("paused", enabled=False)

    scraped = scrape()

    assert value(scraped, "antidote_queue_disabled", queue="orders") == 0
    assert value(scraped, "antidote_queue_disabled", queue="paused") == 1
    assert Queue.objects.count() == 2


def test_every_metric_has_its_help_in_words():
    text = Client().get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode()
    families = list(text_string_to_metric_families(text))

    assert families
    for family in families:
        assert family.name.startswith("antidote_")
        assert len(family.documentation.split()) >= 5, family.name
