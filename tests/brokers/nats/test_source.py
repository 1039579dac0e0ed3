"""The NATS source on the shared server: a consumer that keeps failing a message until JetStream
gives up on it, the advisory captured, the message drained with its origin and reason,
acknowledged (and removed when asked), and what cannot be drained parked with its reason."""

import json
import time

import pytest

from tests.brokers.nats.conftest import source_config
from tests.brokers.records import as_stored
from tests.processes.conftest import wait_for
from workers.brokers.base import SourceDown
from workers.brokers.dead_letters import dead_letter_of
from workers.brokers.nats import record as M
from workers.brokers.nats import source as N

pytestmark = pytest.mark.services


@pytest.fixture
def orders(client, tag):
    """A stream of orders, its capture and parking streams deleted after the test."""
    stream = f"ORDERS_{tag}"
    client.add_stream(stream, [f"orders.{tag}.>"])
    client.made += [stream, f"ANTIDOTE_ADVISORIES_{stream}", f"REFUSED_{tag}"]
    return stream


@pytest.fixture
def open_link(shared_url, orders, tag):
    links = []

    def open_link(**options):
        options.setdefault("parking_stream", f"REFUSED_{tag}")
        link = N.CONNECTOR.open(
            source_config(shared_url, orders, name=f"orders-{tag.lower()}", **options)
        )
        links.append(link)
        return link

    yield open_link
    for link in links:
        link.close()


def _fetch_all(link, expected):
    deliveries = []
    deadline = time.monotonic() + 10
    while len(deliveries) < expected and time.monotonic() < deadline:
        deliveries += link.fetch(limit=100, timeout=0.5)
    return deliveries


def test_a_message_the_consumer_gave_up_on_is_drained_with_its_origin_and_reason(
    client, orders, open_link, tag
):
    link = open_link()
    worker = client.worker(orders, "billing", max_deliver=2)
    client.publish(f"orders.{tag}.created", b'{"order": 1}', headers={"X-Trace": "t-1"})
    client.fail_until_given_up(worker)

    (delivery,) = _fetch_all(link, 1)
    record = as_stored(link.record(delivery))

    assert record["id"].startswith(f"nats-{orders}-1-")
    assert record["queue"] == "orders-dead"
    assert record["body"] == b'{"order": 1}'
    headers = record["headers"]
    assert headers["nats-subject"] == f"orders.{tag}.created"
    assert headers["nats-stream"] == orders
    assert headers["nats-sequence"] == "1"
    assert headers["nats-consumer"] == "billing"
    assert headers["nats-deliveries"] == "2"
    assert headers["nats-advisory"] == "max_deliver"
    assert headers["X-Trace"] == "t-1"
    assert json.loads(headers["nats-headers"]) == {"X-Trace": "t-1"}
    assert headers["nats-stored-at"]
    dead = dead_letter_of(headers)
    assert dead.exception_type == "nats.max_deliver"
    assert dead.reason == (
        f"max deliveries reached: consumer 'billing' of stream '{orders}' gave up after "
        "delivering it 2 times"
    )
    link.ack([delivery])
    assert link.lag() == 0
    assert link.fetch(limit=10, timeout=0.5) == []


def test_a_terminated_message_is_drained_as_terminated(client, orders, open_link, tag):
    link = open_link()
    worker = client.worker(orders, "billing", max_deliver=5)
    client.publish(f"orders.{tag}.created", b"bad")
    client.terminate_next(worker)

    (delivery,) = _fetch_all(link, 1)
    record = as_stored(link.record(delivery))

    assert record["headers"]["nats-advisory"] == "terminated"
    assert record["headers"]["nats-reason"].startswith(
        f"terminated by consumer 'billing' of stream '{orders}' (AckTerm) after delivering it once"
    )
    assert dead_letter_of(record["headers"]).exception_type == "nats.terminated"


def test_advisories_wait_in_the_capture_stream_while_no_antidote_consumer_runs(
    client, orders, open_link, tag
):
    # The first run creates the capture stream; then Antidote stops.
    open_link().close()
    worker = client.worker(orders, "billing", max_deliver=1)
    for n in range(3):
        client.publish(f"orders.{tag}.created", f"order {n}".encode())
    client.fail_until_given_up(worker)
    assert client.stream_info(f"ANTIDOTE_ADVISORIES_{orders}").state.messages == 3

    link = open_link()
    assert link.lag() == 3
    deliveries = _fetch_all(link, 3)
    assert sorted(as_stored(link.record(d))["body"] for d in deliveries) == [
        b"order 0",
        b"order 1",
        b"order 2",
    ]
    link.ack(deliveries)
    # Drained advisories leave the capture stream: it holds what waits, not a history. The
    # server has read every acknowledgement when `ack` returns, but a work-queue stream lets
    # go of an acknowledged message in the consumer's own time, so this waits for it.
    wait_for(
        lambda: client.stream_info(f"ANTIDOTE_ADVISORIES_{orders}").state.messages == 0,
        timeout=30,
        what="the capture stream to let go of three acknowledged advisories",
    )


def test_a_link_that_dies_before_its_acknowledgement_gets_the_same_records_again(
    client, orders, open_link, tag, monkeypatch
):
    monkeypatch.setattr(N, "ACK_WAIT", 1.0)
    first = open_link()
    worker = client.worker(orders, "billing", max_deliver=1)
    client.publish(f"orders.{tag}.a", b"a")
    client.publish(f"orders.{tag}.b", b"b", headers={"Nats-Msg-Id": "order-b"})
    client.fail_until_given_up(worker)
    ids = sorted(as_stored(first.record(d))["id"] for d in _fetch_all(first, 2))
    first.close()  # killed: nothing acknowledged

    time.sleep(1.2)
    second = open_link()
    again = _fetch_all(second, 2)
    assert sorted(as_stored(second.record(d))["id"] for d in again) == ids
    second.ack(again)


def test_remove_deletes_a_drained_message_from_its_stream_once_acknowledged(
    client, orders, open_link, tag
):
    link = open_link(remove=True)
    worker = client.worker(orders, "billing", max_deliver=1)
    client.publish(f"orders.{tag}.a", b"stored")
    client.publish(f"orders.{tag}.b", b"refused by ingest")
    client.fail_until_given_up(worker)
    deliveries = sorted(_fetch_all(link, 2), key=lambda d: as_stored(link.record(d))["body"])
    refused, _stored = deliveries
    assert client.stream_info(orders).state.messages == 2

    link.park(refused, "refused by ingest: body too large")
    link.ack(deliveries)

    # The stored one is gone; the parked one's message stays for whoever looks into the refusal.
    state = client.stream_info(orders).state
    assert state.messages == 1
    assert state.first_seq == 2


def test_without_remove_a_drained_message_stays_in_its_stream(client, orders, open_link, tag):
    link = open_link()
    worker = client.worker(orders, "billing", max_deliver=1)
    client.publish(f"orders.{tag}.a", b"stays")
    client.fail_until_given_up(worker)
    deliveries = _fetch_all(link, 1)
    link.ack(deliveries)
    assert client.stream_info(orders).state.messages == 1


def test_an_advisory_whose_message_is_gone_is_parked_with_its_reason(
    client, orders, open_link, tag
):
    link = open_link(remove=True)
    worker = client.worker(orders, "billing", max_deliver=1)
    client.publish(f"orders.{tag}.a", b"deleted before it was drained")
    client.fail_until_given_up(worker)
    client.delete_msg(orders, 1)

    (delivery,) = _fetch_all(link, 1)
    with pytest.raises(M.OriginalGone) as gone:
        as_stored(link.record(delivery))
    link.park(delivery, str(gone.value))
    link.ack([delivery])

    (parked,) = client.read_all(f"REFUSED_{tag}")
    assert parked.subject == f"antidote.refused.orders-{tag.lower()}"
    assert parked.headers[N.REFUSED_REASON_HEADER].startswith(
        f"message 1 is no longer in stream '{orders}' (deleted, purged or removed by the "
        "stream's limits before it was drained)"
    )
    assert parked.headers[N.REFUSED_SOURCE_HEADER] == f"orders-{tag.lower()}"
    advisory = json.loads(parked.data)
    assert (advisory["stream"], advisory["stream_seq"]) == (orders, 1)
    # Acknowledged: never delivered again.
    assert link.lag() == 0
    assert link.fetch(limit=10, timeout=0.5) == []


def test_an_unreadable_advisory_is_parked_once_even_when_parked_again(
    client, orders, open_link, tag
):
    link = open_link()
    client.publish(f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{orders}.billing", b"not json")
    (delivery,) = _fetch_all(link, 1)
    with pytest.raises(M.AdvisoryUnreadable, match="the advisory is not JSON"):
        as_stored(link.record(delivery))
    # A consumer killed between the park and the acknowledgement parks it again.
    link.park(delivery, "the advisory is not JSON")
    link.park(delivery, "the advisory is not JSON")
    link.ack([delivery])
    (parked,) = client.read_all(f"REFUSED_{tag}")
    assert parked.data == b"not json"


def test_a_consumer_filter_drains_that_consumer_only(client, orders, open_link, tag):
    link = open_link(consumer="billing")
    billing = client.worker(orders, "billing", max_deliver=1)
    shipping = client.worker(orders, "shipping", max_deliver=1)
    client.publish(f"orders.{tag}.a", b"a")
    client.fail_until_given_up(billing)
    client.fail_until_given_up(shipping)
    (delivery,) = _fetch_all(link, 1) + link.fetch(limit=10, timeout=0.5)
    assert as_stored(link.record(delivery))["headers"]["nats-consumer"] == "billing"


def test_a_stream_that_already_captures_the_advisories_can_be_named(client, orders, open_link, tag):
    theirs = f"AUDIT_{tag}"
    client.add_stream(theirs, [f"$JS.EVENT.ADVISORY.CONSUMER.*.{orders}.*"])
    client.made.append(theirs)
    with pytest.raises(
        SourceDown, match=f"stream 'ANTIDOTE_ADVISORIES_{orders}' cannot be created"
    ):
        open_link()

    link = open_link(advisory_stream=theirs)
    worker = client.worker(orders, "billing", max_deliver=2)
    client.publish(f"orders.{tag}.a", b"a")
    # Each nak publishes an advisory of its own there too: not a dead letter, skipped.
    client.fail_until_given_up(worker)
    (delivery,) = _fetch_all(link, 1) + link.fetch(limit=10, timeout=0.5)
    assert as_stored(link.record(delivery))["headers"]["nats-advisory"] == "max_deliver"
    link.ack([delivery])
    assert link.lag() == 0


def test_opening_a_source_whose_stream_is_missing_says_so(shared_url, tag):
    with pytest.raises(SourceDown, match=f"stream 'MISSING_{tag}' does not exist"):
        N.CONNECTOR.open(source_config(shared_url, f"MISSING_{tag}"))


def test_a_server_that_does_not_answer_is_said_without_the_password(own_server):
    own_server.kill()
    config = source_config(f"nats://alice:s3cret@127.0.0.1:{own_server.port}", "ORDERS")
    with pytest.raises(OSError) as refused:
        N.CONNECTOR.open(config)
    assert N.CONNECTOR.why(refused.value, config) == "cannot connect: no NATS server answers"
    link_where, secrets = N.where_of(config.url)
    assert "s3cret" in secrets and "s3cret" not in link_where


@pytest.mark.parametrize(
    ("options", "errors"),
    [
        ({}, []),
        ({"advisory_stream": "CAPTURE", "consumer": "all", "remove": True}, []),
        ({"consumer": "billing", "durable": "antidote-orders", "parking_stream": "P"}, []),
        ({"remove": "yes"}, ["remove must be true (delete a message once drained) or false"]),
        ({"ack_wait": 0}, ["ack_wait must be a number of seconds from 1 to 3600"]),
        ({"consumer": "a.b"}, ["consumer must be a consumer's name, or 'all' for every consumer"]),
        (
            {"advisory_stream": "A B"},
            [
                "advisory_stream (the stream that captures the advisories) must be a JetStream "
                "name: no '.', '*', '>' or spaces"
            ],
        ),
        ({"colour": "red"}, [f"unknown option(s) colour (known: {', '.join(N.OPTIONS)})"]),
    ],
)
def test_options_are_checked(options, errors):
    assert N.CONNECTOR.options_errors(options) == errors
