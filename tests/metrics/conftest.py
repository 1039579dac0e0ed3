"""Fixtures for /metrics: a scrape through the real view, parsed by the Prometheus library's own
parser, and the delivery engine's fixtures (tests/delivery) for real runs."""

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from tests.delivery.conftest import Engine


def scrape(client=None, **headers):
    """{(sample name, frozenset of labels): value} of one scrape from the loopback."""
    answer = (client or Client()).get("/metrics", REMOTE_ADDR="127.0.0.1", **headers)
    assert answer.status_code == 200, answer.content
    return samples(answer.content.decode())


def samples(text):
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(scraped, name, **labels):
    return scraped.get((name, frozenset(labels.items())), 0)


@pytest.fixture
def engine(transactional_db, lake_root, spark, settings):
    settings.DELIVERY_LOCAL_MAX = 0  # every run a Spark job
    return Engine(spark)
