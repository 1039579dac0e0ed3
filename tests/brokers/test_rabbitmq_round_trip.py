"""The whole loop on the real RabbitMQ: a consumer rejects messages of a work queue, RabbitMQ
dead-letters them, Antidote drains the dead-letter queue, quarantines each with its x-death
reason, and an approved "reprocess to its original RabbitMQ queue" publishes them back, where a
consumer receives each once, its body and properties as the publisher sent them."""

import time
import uuid
from datetime import UTC, datetime
from decimal import Decimal

import pika
import pytest

from console.queues.sources import REDRIVE_HANDLER
from tests.brokers.amqp_queues import messages_taken
from tests.brokers.connections import quiet_parameters
from tests.brokers.sources import drained_until, intake_quarantined, redriven, round_trip_load
from tests.conftest import require_service
from tests.decisions.desk import make_desk

URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
DEATH_HEADERS = {"x-death", "x-first-death-reason", "x-first-death-queue", "x-first-death-exchange"}
COUNT = 12
CREATED = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


@pytest.fixture
def broker(monkeypatch):
    require_service("RabbitMQ", port=5672)
    monkeypatch.setenv("ROUND_TRIP_AMQP_URL", URL)
    tag = uuid.uuid4().hex[:8]
    names = {
        "exchange": f"shop.{tag}",
        "work": f"refunds.{tag}",
        "dlq": f"refunds.{tag}.dlq",
    }
    connection = pika.BlockingConnection(quiet_parameters(URL))
    channel = connection.channel()
    channel.exchange_declare(names["exchange"], "direct", durable=True)
    channel.queue_declare(names["dlq"], durable=True)
    channel.queue_declare(
        names["work"],
        durable=True,
        arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": names["dlq"]},
    )
    channel.queue_bind(names["work"], names["exchange"], "refund.requested")
    yield channel, names
    for queue in (names["work"], names["dlq"], names["dlq"] + ".antidote-refused"):
        channel.queue_delete(queue)
    channel.exchange_delete(names["exchange"])
    connection.close()


def _properties(n):
    return pika.BasicProperties(
        content_type="application/json",
        content_encoding="utf-8",
        delivery_mode=2,
        priority=3,
        message_id=f"refund-{n}",
        correlation_id=f"order-{n}",
        reply_to="refunds.replies",
        type="refund.requested",
        app_id="shop",
        timestamp=1_790_000_000 + n,
        headers={
            "tenant": "acme",
            "attempt": n,
            "big": 2**40,
            "vip": n % 2 == 0,
            "amount": Decimal("12.50"),
            "created": CREATED.replace(tzinfo=None),
            "raw": b"\x00\xff",
            "route": {"region": "eu", "zones": [1, 2]},
        },
    )


def _body(n):
    return b'{"refund": %d, "amount": "12,50"}\n\x00\xfe' % n


def _take_all(channel, queue, *, expect, timeout=60):
    taken = []
    deadline = time.monotonic() + timeout
    while len(taken) < expect and time.monotonic() < deadline:
        method, properties, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            time.sleep(0.1)
            continue
        taken.append((properties, body))
    # Anything more would be a duplicate: wait a moment for one to show up.
    time.sleep(0.5)
    return taken + messages_taken(channel, queue)


def test_a_rejected_message_comes_back_to_its_queue_once_and_unchanged(desk, broker):
    channel, names = broker
    for n in range(COUNT):
        channel.basic_publish(names["exchange"], "refund.requested", _body(n), _properties(n))
    # The refunds service rejects every one: RabbitMQ dead-letters them.
    rejected = 0
    while rejected < COUNT:
        method, _, _ = channel.basic_get(names["work"])
        if method is None:
            time.sleep(0.05)
            continue
        channel.basic_reject(method.delivery_tag, requeue=False)
        rejected += 1
    round_trip_load(
        name="refunds-dlq",
        url_env="ROUND_TRIP_AMQP_URL",
        stream=names["dlq"],
        sink=REDRIVE_HANDLER,
    )

    drained_until(
        "refunds-dlq",
        into="refunds-dead",
        count=COUNT,
        done=lambda: channel.queue_declare(names["dlq"], passive=True).method.message_count == 0,
    )

    # Delivered once to the intake handler: quarantined with the reason RabbitMQ recorded.
    quarantined = intake_quarantined(desk, count=COUNT)
    row = quarantined.get(message_id="refund-3")
    assert row.exception_type == "amqp.rejected"
    expected = f"permanent failure: rejected by a consumer of queue '{names['work']}'"
    assert row.reason.startswith(expected)
    page = desk_client(desk).get("/messages/refund-3/")
    assert page.status_code == 200
    assert b"Dead letter" in page.content and names["work"].encode() in page.content

    # The request screen offers the way back, and an approved request takes it.
    offer = desk_client(desk).get("/requests/new?scope=filter&queue=refunds-dead")
    assert b"Reprocess to its original RabbitMQ queue" in offer.content
    redriven(desk)

    received = _take_all(channel, names["work"], expect=COUNT)
    assert len(received) == COUNT
    by_id = {properties.message_id: (properties, body) for properties, body in received}
    assert sorted(by_id) == sorted(f"refund-{n}" for n in range(COUNT))
    for n in range(COUNT):
        properties, body = by_id[f"refund-{n}"]
        sent = _properties(n)
        assert body == _body(n)
        for name in (
            "content_type",
            "content_encoding",
            "delivery_mode",
            "priority",
            "correlation_id",
            "reply_to",
            "type",
            "app_id",
            "timestamp",
        ):
            assert getattr(properties, name) == getattr(sent, name), name
        application = {k: v for k, v in properties.headers.items() if k not in DEATH_HEADERS}
        # As a consumer of the original publish reads them (pika gives timestamps in UTC).
        assert application == {**sent.headers, "created": CREATED}
        # The broker's death record goes with it, as RabbitMQ's shovel keeps it.
        assert properties.headers["x-death"][0]["reason"] == "rejected"
    assert {desk.state(f"refund-{n}")["state"] for n in range(COUNT)} == {"DLVD"}


def desk_client(desk):
    from django.test import Client

    client = Client()
    client.force_login(desk.personas["operator"])
    return client
