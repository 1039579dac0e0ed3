"""The consumer loop of every kind of source (console.ingest.consumers) on the connector shape,
run here with the real RabbitMQ connector against the real broker: what the loop asks of a link
(fetch, record, park, acknowledge, lag) and what it promises whatever the broker (nothing
acknowledged before it is stored, a stop stores what it holds, the lag and where it is connected
reported, a kind that cannot be loaded shown down with its reason).

Queues are the test's own (named with a uuid) and deleted afterwards: other suites share the
broker."""

import threading

import pika
import pytest
from django.db import connection

from console.ingest.consumers import consumers_run, source_config
from console.queues.models import BrokerSource
from tests.ingest import test_rabbitmq_consumer as rabbit
from tests.ingest.test_rabbitmq_consumer import (
    URL_ENV,
    consuming,
    drained_to,
    keys_of,
    source_load,
    source_now,
)
from tests.processes.conftest import wait_for
from workers.brokers import registry as shape
from workers.brokers.rabbitmq.source import CONNECTOR, REFUSED_REASON_HEADER, REFUSED_SUFFIX

pytestmark = pytest.mark.services

broker = rabbit.broker  # the fixture: queues of the test's own, deleted at the end


def _publish(broker, dlq, n, start=0):
    for i in range(start, start + n):
        broker.publish(dlq, f"body {i}".encode(), pika.BasicProperties(message_id=f"m-{i}"))


# --- The RabbitMQ link, as the loop uses it ------------------------------------------------------


def test_the_rabbitmq_link_fetches_records_parks_and_acknowledges_up_to_the_last_tag(
    broker, transactional_db, lake_root
):
    dlq = broker.declare(broker.name("dlq"))
    parking = broker.declare(dlq + REFUSED_SUFFIX)  # deleted at the end (the link makes it)
    _publish(broker, dlq, 6)
    source = source_load(broker, dlq, prefetch=10)
    link = CONNECTOR.open(source_config(source))
    try:
        assert link.where == "RabbitMQ at 127.0.0.1:5672, vhost '/'"
        assert link.lag() == 6  # nothing taken yet: every dead letter waits

        taken = []
        while len(taken) < 6:
            taken += link.fetch(limit=6 - len(taken), timeout=5)
        assert [d.token for d in taken] == sorted(d.token for d in taken)
        record = link.record(taken[0])
        assert (record["id"], record["queue"], record["body"]) == (
            "m-0",
            source.queue.name,
            b"body 0",
        )
        assert link.fetch(limit=5, timeout=0.2) == []  # nothing more: it waits, then says so

        link.park(taken[5], "refused for a reason")
        link.ack(taken[:3])  # one acknowledgement, multiple, up to the third
    finally:
        link.close()

    # The three not acknowledged went back; the parked one is kept with its reason.
    wait_for(lambda: broker.count(dlq) == 3, timeout=30, what="the unacknowledged to return")
    ((properties, body),) = broker.get_all(parking)
    assert (body, properties.message_id) == (b"body 5", "m-5")
    assert properties.headers[REFUSED_REASON_HEADER] == "refused for a reason"


def test_rabbitmq_sources_take_no_options_and_name_their_parking_queue(
    broker, transactional_db, lake_root
):
    source = source_load(broker, broker.declare(broker.name("dlq")))

    assert CONNECTOR.options_errors({}) == []
    assert CONNECTOR.options_errors({"stream": "x"}) == [
        "RabbitMQ sources take no options, not stream"
    ]
    assert CONNECTOR.parking_name(source_config(source)) == source.broker_queue + REFUSED_SUFFIX
    assert (CONNECTOR.kind, CONNECTOR.title) == ("rabbitmq", "RabbitMQ")


# --- The loop ------------------------------------------------------------------------------------


def test_the_loop_reports_where_it_is_connected_and_the_lag_down_to_nothing(
    broker, transactional_db, lake_root
):
    dlq = broker.declare(broker.name("dlq"))
    _publish(broker, dlq, 40)
    source = source_load(broker, dlq, batch_size=10, prefetch=20)

    with consuming(source):
        wait_for(drained_to(source, 40), timeout=60, what="the drain")
        # The depth is asked for every few seconds at most: the heartbeat brings the last one.
        wait_for(lambda: source_now(source).lag == 0, timeout=30, what="the lag to reach 0")
        now = source_now(source)

    assert now.connected_to == "RabbitMQ at 127.0.0.1:5672, vhost '/'"
    assert now.lag_at is not None and now.lag_at >= now.state_since
    assert keys_of(source.queue.name).count() == 40


def test_a_stop_stores_and_acknowledges_the_batch_in_hand_before_closing(
    broker, transactional_db, lake_root
):
    dlq = broker.declare(broker.name("dlq"))
    # A batch that would wait a minute of quiet (and five of age) before it is stored.
    source = source_load(broker, dlq, batch_size=1000, prefetch=2000, batch_seconds=60)

    with consuming(source) as said:
        wait_for(lambda: source_now(source).state == "consuming", timeout=30, what="consuming")
        _publish(broker, dlq, 25)
        # Taken from the broker (not ready any more), not yet stored: the batch is in hand.
        wait_for(lambda: broker.count(dlq) == 0, timeout=30, what="the deliveries to be taken")
        assert source_now(source).drained == 0

    assert source_now(source).drained == 25
    assert keys_of(source.queue.name).count() == 25
    assert said[-1] == f"{source.name}: stopped"
    # Acknowledged, not handed back on close: nothing waits on the broker, none unacknowledged.
    assert broker.count(dlq) == 0
    assert broker.get_all(dlq) == []


def test_a_source_whose_connector_cannot_be_loaded_shows_down_saying_so(
    broker, transactional_db, lake_root, monkeypatch
):
    # As a NATS source looks to a consumer whose NATS connector (or client) is not installed.
    monkeypatch.setitem(shape.CONNECTOR_MODULES, "nats", "workers.brokers.no_such_connector")
    source = source_load(broker, broker.declare(broker.name("dlq")))
    BrokerSource.objects.filter(pk=source.pk).update(kind="nats")
    source = source_now(source)

    with consuming(source) as said:
        wait_for(lambda: source_now(source).state == "down", timeout=30, what="down")
        down = source_now(source)

    assert down.last_error.startswith(
        f"source {source.name}: the NATS JetStream connector cannot be loaded "
        "(workers.brokers.no_such_connector: No module named"
    )
    assert down.retry_at is not None
    assert said[0] == f"{source.name}: starting"
    assert said[1].startswith(f"{source.name}: down ({down.last_error}); retrying at ")


def test_consumers_run_drains_only_the_kinds_it_is_given(broker, transactional_db, lake_root):
    dlq = broker.declare(broker.name("dlq"))
    _publish(broker, dlq, 3)
    source = source_load(broker, dlq)
    stop, said = threading.Event(), []

    def run(kinds):
        try:
            consumers_run(stop=stop, kinds=kinds, say=said.append, every=0.2)
        finally:
            connection.close()

    thread = threading.Thread(target=run, args=(["redis"],), daemon=True)
    thread.start()
    try:
        wait_for(lambda: said, timeout=10, what="the first line")
        assert said[0] == "no enabled Redis Streams source; checking again every 0 s"
        assert source_now(source).drained == 0
    finally:
        stop.set()
        thread.join(timeout=30)

    stop.clear()
    said.clear()
    thread = threading.Thread(target=run, args=(None,), daemon=True)
    thread.start()
    try:
        wait_for(drained_to(source, 3), timeout=30, what="every kind's sources to be drained")
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert source_now(source).url_env == URL_ENV
