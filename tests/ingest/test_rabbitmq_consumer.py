"""The RabbitMQ consumer against a real broker: dead letters drained into the lake once each,
refused messages parked with their reason, and a broker that goes away waited for, not hammered.

Each test declares queues of its own (named with a uuid) and deletes them afterwards: other
suites share the broker."""

import contextlib
import json
import threading
import time
import uuid
from collections import Counter

import pika
import pytest
from django.db import connection
from django.utils import timezone

from console.browse.selectors import message_detail
from console.delivery.execution import delivery_run
from console.ingest.consumers import backoff_seconds, consumers_run
from console.ingest.models import MessageKey
from console.queues.models import BrokerSource
from console.queues.services import queues_load
from tests.brokers.amqp_queues import messages_taken
from tests.brokers.sources import consuming
from tests.brokers.tcp_proxy import TcpProxy
from tests.conftest import require_service
from tests.ingest.conftest import lake_messages
from tests.processes.conftest import wait_for
from workers.brokers.rabbitmq.record import PROPERTIES_HEADER, publish_properties
from workers.brokers.rabbitmq.source import REFUSED_REASON_HEADER, REFUSED_SUFFIX

pytestmark = pytest.mark.services

RABBITMQ_PORT = 5672
URL_ENV = "ANTIDOTE_TEST_AMQP_URL"
INTAKE = "workers.brokers.intake.dead_letter"


def amqp_url(port=RABBITMQ_PORT):
    return f"amqp://guest:guest@127.0.0.1:{port}/%2F"


# --- The broker: queues of the test's own, dead letters made by a real rejection -----------------


class Broker:
    """A connection of the test's own and the queues it made (deleted at the end)."""

    def __init__(self):
        # No heartbeats: the connection sits idle while a delivery run goes on.
        self.connection = pika.BlockingConnection(pika.URLParameters(amqp_url() + "?heartbeat=0"))
        self.channel = self.connection.channel()
        self.declared = []
        self.tag = uuid.uuid4().hex[:10]

    def name(self, what):
        return f"antidote-test-{what}-{self.tag}"

    def declare(self, name, **arguments):
        self.channel.queue_declare(name, durable=True, arguments=arguments or None)
        self.declared.append(name)
        return name

    def count(self, name):
        return self.channel.queue_declare(name, passive=True).method.message_count

    def publish(self, queue, body, properties=None):
        self.channel.basic_publish("", queue, body, properties or pika.BasicProperties())

    def dead_letters(self, messages):
        """Publish `messages` [(body, properties)] to a work queue whose consumer rejects them
        all, so that RabbitMQ dead-letters them into a DLQ; (work queue, DLQ)."""
        dlq = self.declare(self.name("dlq"))
        work = self.declare(
            self.name("work"),
            **{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq},
        )
        for body, properties in messages:
            self.publish(work, body, properties)
        self.channel.basic_qos(prefetch_count=500)
        deliveries = self.channel.consume(work, inactivity_timeout=10)
        for rejected, (method, _, _) in enumerate(deliveries, start=1):
            assert method is not None, f"only {rejected - 1} of {len(messages)} were rejected"
            self.channel.basic_reject(method.delivery_tag, requeue=False)
            if rejected == len(messages):
                break
        self.channel.cancel()
        wait_for(lambda: self.count(dlq) == len(messages), timeout=30, what="the dead letters")
        return work, dlq

    def get_all(self, name):
        """Every message of a queue, taken (acknowledged) for good."""
        return messages_taken(self.channel, name)

    def close(self):
        for name in self.declared:
            with contextlib.suppress(pika.exceptions.AMQPError):
                self.channel.queue_delete(name)
        with contextlib.suppress(pika.exceptions.AMQPError):
            self.connection.close()


@pytest.fixture
def broker(monkeypatch):
    require_service("RabbitMQ", port=RABBITMQ_PORT)
    monkeypatch.setenv(URL_ENV, amqp_url())
    broker = Broker()
    yield broker
    broker.close()


def source_load(broker, dlq, *, url_env=URL_ENV, **options):
    """An intake queue and a source draining `dlq` into it, loaded as from a queue file."""
    into = f"intake-{broker.tag}"
    name = f"source-{broker.tag}"
    options = {"batch_size": 50, "prefetch": 200, "batch_seconds": 0.2, **options}
    queues_load(
        data={
            "queues": [{"name": into, "handler": INTAKE}],
            "sources": [
                {"name": name, "url_env": url_env, "broker_queue": dlq, "queue": into, **options}
            ],
        }
    )
    return BrokerSource.objects.select_related("queue").get(name=name)


def source_now(source):
    return BrokerSource.objects.get(pk=source.pk)


def drained_to(source, count):
    return lambda: source_now(source).drained >= count


def keys_of(queue):
    return MessageKey.objects.filter(queue=queue)


# --- Draining ------------------------------------------------------------------------------------


def _order(i, **properties):
    return (
        json.dumps({"order": i}).encode(),
        pika.BasicProperties(
            message_id=f"order-{i}",
            content_type="application/json",
            correlation_id=f"conv-{i % 3}",
            delivery_mode=2,
            timestamp=1_796_078_400 + i,
            headers={"tenant": "acme", "attempt": 3},
            **properties,
        ),
    )


def test_it_drains_dead_letters_into_the_lake_once_each_and_quarantines_them_on_delivery(
    broker, transactional_db, lake_root
):
    n = 30
    messages = [_order(i) for i in range(n - 1)]
    messages.append((b"no id at all", pika.BasicProperties(headers={"tenant": "acme"})))
    work, dlq = broker.dead_letters(messages)
    source = source_load(broker, dlq)

    with consuming(source) as said:
        wait_for(drained_to(source, n), timeout=60, what="the consumer to drain the DLQ")

    assert broker.count(dlq) == 0
    source = source_now(source)
    assert (source.drained, source.refused, source.state) == (n, 0, "stopped")
    assert said[:3] == [f"{source.name}: {s}" for s in ("starting", "connecting", "consuming")]
    assert said[-1] == f"{source.name}: stopped"
    keys = keys_of(source.queue.name)
    assert keys.count() == n
    assert {f"order-{i}" for i in range(n - 1)} < set(keys.values_list("message_id", flat=True))

    stored = lake_messages()
    assert Counter(r["queue"] for r in stored.values()) == {source.queue.name: n}
    row = stored["order-7"]
    assert row["body"] == b'{"order": 7}'
    assert (row["content_type"], row["conversation_id"]) == ("application/json", "conv-1")
    headers = json.loads(row["headers"])
    assert headers["tenant"] == "acme"
    (death,) = json.loads(headers["x-death"])
    assert (death["reason"], death["queue"], death["count"]) == ("rejected", work, 1)
    properties = json.loads(headers[PROPERTIES_HEADER])
    assert properties["message_id"] == "order-7"
    assert properties["timestamp"] == 1_796_078_407
    assert properties["headers"]["attempt"] == 3

    run = delivery_run(queues=[source.queue.name])
    assert run.claimed == n
    for message_id in ("order-0", "order-7"):
        detail = message_detail(message_id=message_id)
        assert detail["state"] == "NDLV"
        assert f"rejected by a consumer of queue '{work}'" in detail["reason"]
        assert detail["exception_type"] == "amqp.rejected"


def test_it_parks_a_refused_message_with_its_reason_and_stores_the_rest_of_the_batch(
    broker, transactional_db, lake_root, settings
):
    settings.MAX_BODY_BYTES = 100
    dlq = broker.declare(broker.name("dlq"))
    for i in range(3):
        broker.publish(dlq, b"small", pika.BasicProperties(message_id=f"ok-{i}"))
    broker.publish(
        dlq,
        b"x" * 500,
        pika.BasicProperties(message_id="too-big", priority=4, headers={"tenant": "acme"}),
    )
    broker.publish(
        dlq, b"garbled", pika.BasicProperties(message_id="garbled", headers={"x-death": "junk"})
    )
    source = source_load(broker, dlq, batch_size=10)
    parking = broker.declare(dlq + REFUSED_SUFFIX)  # deleted at the end (the consumer makes it)

    with consuming(source):
        wait_for(lambda: source_now(source).refused == 1, timeout=60, what="the refusal")
        wait_for(drained_to(source, 4), timeout=60, what="the rest of the batch")
        last_error = source_now(source).last_error

    assert sorted(keys_of(source.queue.name).values_list("message_id", flat=True)) == [
        "garbled",
        "ok-0",
        "ok-1",
        "ok-2",
    ]
    assert broker.count(dlq) == 0  # nothing requeued
    ((properties, body),) = broker.get_all(parking)
    assert body == b"x" * 500
    assert (properties.message_id, properties.priority) == ("too-big", 4)
    assert properties.headers["tenant"] == "acme"
    reason = properties.headers[REFUSED_REASON_HEADER]
    assert reason == "body is 500 bytes, over the limit of 100 bytes (MAX_BODY_BYTES)"
    assert (source_now(source).drained, source_now(source).refused) == (4, 1)
    assert last_error == f"1 message(s) set aside in {parking}; latest: {reason}"

    # Stored as it came; the intake handler quarantines it, saying what is wrong with it.
    assert json.loads(lake_messages()["garbled"]["headers"])["x-death"] == "junk"
    delivery_run(queues=[source.queue.name])
    detail = message_detail(message_id="garbled")
    assert (detail["state"], detail["exception_type"]) == ("NDLV", "amqp.malformed-death-record")


def test_a_message_dead_lettered_again_after_a_redrive_is_stored_as_a_new_death(
    broker, transactional_db, lake_root
):
    work, dlq = broker.dead_letters([_order(1)])
    source = source_load(broker, dlq)
    with consuming(source):
        wait_for(drained_to(source, 1), timeout=60, what="the first death")
        # Redriven as a redrive does (its properties as received, x-death included) and
        # rejected again: RabbitMQ counts a second death in the same x-death entry.
        row = lake_messages()["order-1"]
        properties = publish_properties(json.loads(row["headers"]))
        broker.publish(work, row["body"], properties)
        method, _, _ = next(broker.channel.consume(work, inactivity_timeout=10))
        broker.channel.basic_reject(method.delivery_tag, requeue=False)
        broker.channel.cancel()
        wait_for(drained_to(source, 2), timeout=60, what="the second death")

    assert set(keys_of(source.queue.name).values_list("message_id", flat=True)) == {
        "order-1",
        "order-1#death-2",
    }


# --- When the source cannot be drained -----------------------------------------------------------


@pytest.fixture
def proxy():
    proxy = TcpProxy(upstream=("127.0.0.1", RABBITMQ_PORT))
    yield proxy
    proxy.close()


def _down(source):
    return lambda: source_now(source).state == "down"


def test_a_broker_out_of_reach_shows_down_without_secrets_and_is_retried_with_backoff(
    broker, transactional_db, lake_root, proxy, monkeypatch
):
    monkeypatch.setenv("ANTIDOTE_TEST_PROXIED_URL", amqp_url(proxy.port))
    dlq = broker.declare(broker.name("dlq"))
    for i in range(20):
        broker.publish(dlq, *_order(i))
    source = source_load(broker, dlq, url_env="ANTIDOTE_TEST_PROXIED_URL")
    proxy.cut()

    with consuming(source) as said:
        wait_for(_down(source), timeout=30, what="the source to show down")
        time.sleep(5)
        # Every attempt starts "connecting". Backoff 1, 2, 4 s (less jitter): a handful of
        # attempts in 5 s, not hundreds.
        attempts = [line for line in said if line.endswith(": connecting")]
        assert 2 <= len(attempts) <= 5
        down = source_now(source)
        assert down.last_error == (
            f"RabbitMQ at 127.0.0.1:{proxy.port}, vhost '/': cannot connect: Connection refused"
        )
        assert "guest" not in down.last_error and "amqp://" not in down.last_error
        assert down.retry_at > down.state_since
        assert down.heartbeat_at >= down.state_since
        assert down.drained == 0

        proxy.restore()
        wait_for(drained_to(source, 20), timeout=60, what="the drain after the restore")
        assert source_now(source).state == "consuming"
        assert source_now(source).last_error == ""

        # Cut while consuming: the connection is lost, and found again once restored.
        proxy.cut()
        wait_for(_down(source), timeout=30, what="the lost connection to show")
        for i in range(20, 30):
            broker.publish(dlq, *_order(i))
        proxy.restore()
        wait_for(drained_to(source, 30), timeout=60, what="the drain after the second cut")

    assert keys_of(source.queue.name).count() == 30
    assert broker.count(dlq) == 0
    assert not any("guest" in line for line in said)


def test_a_missing_queue_or_url_shows_down_with_a_clear_error_until_it_is_there(
    broker, transactional_db, lake_root, monkeypatch
):
    dlq = broker.name("dlq")  # not declared yet
    monkeypatch.delenv("ANTIDOTE_TEST_UNSET_URL", raising=False)
    source = source_load(broker, dlq, url_env="ANTIDOTE_TEST_UNSET_URL")

    with consuming(source):
        wait_for(_down(source), timeout=30, what="the source to show down")
        assert "environment variable ANTIDOTE_TEST_UNSET_URL" in source_now(source).last_error
    BrokerSource.objects.filter(pk=source.pk).update(url_env=URL_ENV)
    source = source_now(source)

    with consuming(source):
        wait_for(
            lambda: "does not exist" in source_now(source).last_error,
            timeout=30,
            what="the missing queue to show",
        )
        assert f"queue '{dlq}' does not exist" in source_now(source).last_error
        assert source_now(source).state == "down"
        broker.declare(dlq)
        broker.publish(dlq, *_order(1))
        wait_for(drained_to(source, 1), timeout=60, what="the drain once the queue exists")


def test_a_wrong_password_shows_down_saying_so_without_the_password(
    broker, transactional_db, lake_root, monkeypatch
):
    monkeypatch.setenv("ANTIDOTE_TEST_WRONG_URL", "amqp://guest:s3cret-Wr0ng@127.0.0.1:5672/%2F")
    source = source_load(
        broker, broker.declare(broker.name("dlq")), url_env="ANTIDOTE_TEST_WRONG_URL"
    )

    with consuming(source) as said:
        wait_for(_down(source), timeout=30, what="the source to show down")
        error = source_now(source).last_error

    assert error == (
        "RabbitMQ at 127.0.0.1:5672, vhost '/': the broker refused the login "
        "(check the user and password in ANTIDOTE_TEST_WRONG_URL)"
    )
    assert not any("s3cret" in line for line in said)


def test_a_queue_deleted_while_consumed_shows_down_and_is_drained_once_it_is_back(
    broker, transactional_db, lake_root
):
    dlq = broker.declare(broker.name("dlq"))
    source = source_load(broker, dlq)
    with consuming(source):
        wait_for(lambda: source_now(source).state == "consuming", timeout=30, what="consuming")
        broker.channel.queue_delete(dlq)
        wait_for(_down(source), timeout=30, what="the deleted queue to show")
        assert "cancelled the consumer" in source_now(source).last_error
        broker.declare(dlq)
        broker.publish(dlq, *_order(1))
        wait_for(drained_to(source, 1), timeout=60, what="the drain once it is back")


def test_consumers_run_starts_new_sources_and_stops_disabled_ones(
    broker, transactional_db, lake_root
):
    stop, said = threading.Event(), []

    def run():
        try:
            consumers_run(stop=stop, kinds=["rabbitmq"], say=said.append, every=0.2)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: said, timeout=10, what="the first line")
        assert said[0].startswith("no enabled RabbitMQ source")
        dlq = broker.declare(broker.name("dlq"))
        broker.publish(dlq, *_order(1))
        source = source_load(broker, dlq)
        wait_for(drained_to(source, 1), timeout=30, what="the new source to be drained")
        BrokerSource.objects.filter(pk=source.pk).update(enabled=False)
        wait_for(lambda: source_now(source).state == "stopped", timeout=30, what="it to be stopped")
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert f"{source.name}: stopped" in said


def test_backoff_doubles_from_one_second_to_a_minute_less_some_jitter():
    assert [backoff_seconds(a, rand=lambda: 0.0) for a in range(8)] == [
        1,
        2,
        4,
        8,
        16,
        32,
        60,
        60,
    ]
    assert backoff_seconds(0, rand=lambda: 1.0) == 0.75
    assert backoff_seconds(50, rand=lambda: 1.0) == 45


def test_a_quiet_source_keeps_its_heartbeat_while_consuming(broker, transactional_db, lake_root):
    dlq = broker.declare(broker.name("dlq"))
    source = source_load(broker, dlq)
    with consuming(source):
        wait_for(lambda: source_now(source).state == "consuming", timeout=30, what="consuming")
        seen = source_now(source).heartbeat_at
        time.sleep(6)
        assert source_now(source).heartbeat_at > seen
        assert source_now(source).heartbeat_at <= timezone.now()
