"""The demo's Redis-fed queue: when Redis answers, `seed_demo` has a billing service leave a
set of invoices unacknowledged once, and loads the source that claims them; when it does not,
the demo goes on without it and says how to get it. Each test has a stream of its own in the
tests' database of the shared Redis (deleted afterwards)."""

import time
import uuid
from pathlib import Path

import pytest
import redis
from django.conf import settings

from console.queues.models import BrokerSource
from tests.brokers.redis_streams.conftest import SHARED_URL
from tests.conftest import require_service
from tests.demo.sources import (
    demo_seed,
    demo_source,
    source_drain,
    start_over,
    went_on_without_its_broker,
)
from workers.brokers.dead_letters import dead_letter_of
from workers.demo import redis_streams as demo

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("demo_dirs")]


@pytest.fixture
def names(monkeypatch):
    require_service("Redis", port=6379)
    names = demo.Names(stream=f"antidote-test:{uuid.uuid4().hex[:10]}:demo-invoices")
    monkeypatch.setattr(demo, "NAMES", names)
    monkeypatch.setenv(demo.URL_ENV, SHARED_URL)
    client = redis.Redis.from_url(SHARED_URL)
    yield names
    client.delete(names.stream)
    client.close()


def _pending(names):
    """{entry id: (consumer, times delivered)} of the demo group's pending entries."""
    client = redis.Redis.from_url(SHARED_URL)
    try:
        rows = client.xpending_range(names.stream, names.group, "-", "+", 1000)
    finally:
        client.close()
    return {r["message_id"].decode(): (r["consumer"].decode(), r["times_delivered"]) for r in rows}


def _drain(*, ack):
    """What the sources process would claim now, once the entries were idle for the source's
    `min_idle_ms`."""
    source = BrokerSource.objects.get(name="invoices-redis")
    time.sleep(source.options["min_idle_ms"] / 1000 + 0.2)
    return source_drain("invoices-redis", ack=ack, first_wait=1.0, then_wait=0.2)


def test_with_redis_the_demo_feeds_a_stream_once_and_its_source_drains_it(names):
    output = demo_seed()

    assert (
        f"Redis demo: {demo.INVOICES} invoices left unacknowledged by group billing of stream "
        f"{names.stream} at 127.0.0.1:6379/7" in output
    )
    source = demo_source(
        "invoices-redis", dead="invoices-dead", redrive="invoices-redrive", url_env=demo.URL_ENV
    )
    assert (source.kind, source.broker_queue) == ("redis", names.stream)
    pending = _pending(names)
    assert len(pending) == demo.INVOICES
    # The billing service had each as often as the source asks, and no more.
    threshold = source.options["min_deliveries"]
    assert set(pending.values()) == {(names.consumer, threshold)}
    records = _drain(ack=False)
    assert len(records) == demo.INVOICES
    assert all(r["queue"] == "invoices-dead" for r in records)
    assert {dead_letter_of(r["headers"]).exception_type for r in records} == {
        "redis.unacknowledged"
    }
    # The old shop's entries, without a body field, are kept as the JSON of their fields.
    assert sum("redis-fields" not in r["headers"] for r in records) == demo.INVOICES // 4

    again = demo_seed()

    assert "Redis demo: already fed at 127.0.0.1:6379/7." in again
    assert len(_pending(names)) == demo.INVOICES


def test_without_redis_the_demo_says_how_to_get_the_redis_queue(monkeypatch):
    # A port nothing listens on: the embedded default must not need a server.
    monkeypatch.setenv(demo.URL_ENV, "redis://:secret@127.0.0.1:1/3")

    output = demo_seed()

    assert (
        "Redis demo: off (nothing answers at 127.0.0.1:1/3; start `redis-server` and run make "
        "run again for a Redis-fed queue)." in output
    )
    went_on_without_its_broker(output)


def test_make_run_sets_the_url_the_demo_says_it_does():
    makefile = (Path(settings.BASE_DIR) / "Makefile").read_text()

    assert f"run: export {demo.URL_ENV} ?= {demo.MAKE_RUN_URL}\n" in makefile
    # A database of the demo's own: Celery may use 0, the tests 7 and the soak benchmark 11.
    assert demo.MAKE_RUN_URL.rsplit("/", 1)[1] not in ("0", "7", "11")


@pytest.mark.django_db(transaction=True)
def test_a_new_database_feeds_the_demo_stream_again_once_it_was_drained(names):
    demo_seed()
    assert len(_drain(ack=True)) == demo.INVOICES
    assert _pending(names) == {}
    start_over()

    output = demo_seed()

    assert f"Redis demo: {demo.INVOICES} invoices left unacknowledged" in output
    assert len(_pending(names)) == demo.INVOICES
    assert "Redis demo: already fed" in demo_seed()  # this database has it now


@pytest.mark.django_db(transaction=True)
def test_a_new_database_leaves_dead_letters_not_drained_yet_to_be_drained_into_it(names):
    demo_seed()
    start_over()

    output = demo_seed()

    assert (
        f"Redis demo: {demo.INVOICES} dead letters of stream {names.stream} already waiting"
        in output
    )
    assert len(_pending(names)) == demo.INVOICES  # not doubled
    assert BrokerSource.objects.filter(name="invoices-redis").exists()
