"""RabbitMQ going away while a redrive runs, through the whole engine: what it confirmed is
delivered and never published again, the rest fails transiently with a readable reason, waits for
the queue's backoff, and reaches the queue once the broker is back."""

import threading
import time
import uuid
from collections import Counter
from datetime import UTC, datetime

import pika
import pytest

from console.ingest.services import messages_ingest
from console.queues.sources import REDRIVE_HANDLER
from tests.brokers.amqp_queues import messages_taken
from tests.brokers.connections import quiet_parameters
from tests.brokers.tcp_proxy import TcpProxy
from tests.conftest import require_service
from tests.decisions.desk import make_desk
from workers.brokers.rabbitmq.record import record_of

URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
COUNT = 600
CUT_AFTER = 150


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


@pytest.fixture
def destination():
    require_service("RabbitMQ", port=5672)
    connection = pika.BlockingConnection(quiet_parameters(URL))
    channel = connection.channel()
    name = f"antidote.test.outage.{uuid.uuid4().hex}"
    channel.queue_declare(name, durable=True)
    yield channel, name
    channel.queue_delete(name)
    connection.close()


@pytest.fixture
def proxy(monkeypatch):
    proxy = TcpProxy()
    monkeypatch.setenv("OUTAGE_AMQP_URL", f"amqp://guest:guest@{proxy.url_host}/%2F")
    yield proxy
    proxy.close()


def _dead_letter(n, queue):
    death = {
        "count": 1,
        "reason": "rejected",
        "queue": queue,
        "time": datetime(2026, 11, 24, 12, 0, tzinfo=UTC),
        "exchange": "",
        "routing-keys": [queue],
    }
    properties = pika.BasicProperties(
        message_id=f"refund-{n}", delivery_mode=2, headers={"x-death": [death], "n": n}
    )
    return record_of(
        body=b"refund %d" % n,
        properties=properties,
        drained_from=f"{queue}.dlq",
        into="redrive",
        source="dlq",
    )


def _cut_when(channel_url, queue, proxy, depth):
    """Cut the proxy once `queue` holds `depth` messages: RabbitMQ goes away mid-redrive."""
    connection = pika.BlockingConnection(quiet_parameters(channel_url))
    channel = connection.channel()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if channel.queue_declare(queue, passive=True).method.message_count >= depth:
            proxy.cut()
            break
        time.sleep(0.01)
    connection.close()


def test_a_broker_outage_mid_redrive_is_retried_and_nothing_confirmed_is_sent_twice(
    desk, destination, proxy
):
    channel, queue = destination
    desk.queue(
        "redrive",
        handler=REDRIVE_HANDLER,
        handler_options={"url_env": "OUTAGE_AMQP_URL", "window": 10},
        backoff_delays=[60],
        max_failed_deliveries=5,
    )
    records = [_dead_letter(n, queue) for n in range(COUNT)]
    assert not messages_ingest(records=records, source="test", from_source=True).errors
    cutter = threading.Thread(target=_cut_when, args=(URL, queue, proxy, CUT_AFTER))
    cutter.start()

    desk.deliver()
    cutter.join()

    states = {r["id"]: desk.state(r["id"]) for r in records}
    confirmed = {i for i, s in states.items() if s["state"] == "DLVD"}
    waiting = {i for i, s in states.items() if s["state"] == "WAIT"}
    assert confirmed and waiting and confirmed | waiting == set(states)
    reasons = {states[i]["reason"] for i in waiting}
    assert all("RabbitMQ" in r or "127.0.0.1" in r for r in reasons), reasons
    assert not any("guest:guest" in r for r in reasons)

    # Back after the outage: the waiting ones go once the queue's backoff has passed.
    proxy.restore()
    desk.later(seconds=61)
    desk.deliver_until_idle()

    assert {desk.state(i)["state"] for i in states} == {"DLVD"}
    received = Counter(properties.message_id for properties, _ in messages_taken(channel, queue))
    assert set(received) == set(states)
    # A confirmed publish is never published again; only one the broker never confirmed may be.
    assert {i: received[i] for i in confirmed} == dict.fromkeys(confirmed, 1)
