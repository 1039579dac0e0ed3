"""The demo's Redis-fed queue: when Redis answers, `seed_demo` has a billing service leave a
set of invoices unacknowledged once, and loads the source that claims them; when it does not,
the demo goes on without it and says how to get it. Each test has a stream of its own in the
tests' database of the shared Redis (deleted afterwards)."""

import time
import uuid

import pytest
import redis

from console.queues.models import BrokerSource
from tests.brokers.redis_streams.conftest import SHARED_URL
from tests.conftest import require_service
from tests.demo.sources import demo_on, source_drain
from tests.demo.stream_demos import StreamDemoTests
from workers.brokers.dead_letters import dead_letter_of
from workers.demo import redis_streams as demo

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("demo_dirs")]


@pytest.fixture
def names(monkeypatch):
    require_service("Redis", port=6379)
    names = demo.Names(stream=f"antidote-test:{uuid.uuid4().hex[:10]}:demo-invoices")
    demo_on(monkeypatch, demo, names=names, url=SHARED_URL)
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


def test_make_run_gives_the_demo_a_redis_database_of_its_own():
    # A database of the demo's own: Celery may use 0, the tests 7 and the soak benchmark 11.
    assert demo.MAKE_RUN_URL.rsplit("/", 1)[1] not in ("0", "7", "11")


class TestTheRedisDemo(StreamDemoTests):
    title = "Redis"
    count = demo.INVOICES
    source = "invoices-redis"
    kind, dead, redrive = "redis", "invoices-dead", "invoices-redrive"
    address = "127.0.0.1:6379/7"
    url_env, make_run_url = demo.URL_ENV, demo.MAKE_RUN_URL
    unreachable_url = "redis://:secret@127.0.0.1:1/3"
    off_line = (
        "Redis demo: off (nothing answers at 127.0.0.1:1/3; start `redis-server` and run make "
        "run again for a Redis-fed queue)."
    )

    def waiting(self, broker):
        return len(_pending(broker))

    def drain(self, broker, *, ack):
        return _drain(ack=ack)

    def first_fed_line(self, broker):
        return (
            f"Redis demo: {demo.INVOICES} invoices left unacknowledged by group billing of stream "
            f"{broker.stream} at 127.0.0.1:6379/7"
        )

    def fed_as_the_source_asks(self, broker, source):
        # The billing service had each as often as the source asks, and no more.
        threshold = source.options["min_deliveries"]
        assert set(_pending(broker).values()) == {(broker.consumer, threshold)}

    def records_checked(self, broker, records):
        assert {dead_letter_of(r["headers"]).exception_type for r in records} == {
            "redis.unacknowledged"
        }
        # The old shop's entries, without a body field, are kept as the JSON of their fields.
        assert sum("redis-fields" not in r["headers"] for r in records) == demo.INVOICES // 4

    def fed_line(self, broker):
        return f"Redis demo: {demo.INVOICES} invoices left unacknowledged"

    def still_waiting_line(self, broker):
        return f"Redis demo: {demo.INVOICES} dead letters of stream {broker.stream} already waiting"
