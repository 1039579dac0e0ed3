"""Fixtures for /metrics: a scrape through the real view, parsed by the Prometheus library's own
parser, and the delivery engine's fixtures (tests/delivery) for real runs."""

from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

# The delivery engine's fixture: runs as Spark jobs, or without Spark too where a test says so
# (tests.delivery both_paths).
from tests.delivery.conftest import delivery_path, engine  # noqa: F401 - fixtures used here


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
