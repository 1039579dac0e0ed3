"""The NATS redrive sink: a drained message published back to its subject with JetStream's
publish acknowledgement, received once, body and headers unchanged; a retried publish stored
once (Nats-Msg-Id); failures transient or permanent as the engine needs them."""

import json
import time

import pytest

from tests.brokers.nats.conftest import Client, source_config
from tests.brokers.records import as_stored
from workers.brokers.base import RECONNECT_PAUSE
from workers.brokers.nats import record as M
from workers.brokers.nats import sink as NS
from workers.brokers.nats import source as N
from workers.engine.handlers import Message, PermanentFailure

pytestmark = pytest.mark.services


@pytest.fixture
def orders(client, tag):
    stream = f"ORDERS_{tag}"
    client.add_stream(stream, [f"orders.{tag}.>"])
    client.made += [stream, f"ANTIDOTE_ADVISORIES_{stream}"]
    return stream


@pytest.fixture
def nats_env(shared_url, monkeypatch):
    monkeypatch.setenv("ANTIDOTE_NATS_URL", shared_url)


def _message(record, redrive_target=None):
    return Message(
        id=record["id"],
        queue="orders-redrive",
        body=record["body"],
        content_type=record.get("content_type"),
        headers=record["headers"],
        redrive_target=redrive_target,
    )


def _redrive(handler, message):
    """One engine batch of one call: the call, then settle."""
    deferred = handler(message)
    handler.settle()
    assert deferred.settled
    return deferred.error


def _dead_letter(client, shared_url, stream, tag, *, body, headers):
    """A message the consumer 'billing' gave up on, drained: its ingest record."""
    link = N.CONNECTOR.open(source_config(shared_url, stream))
    try:
        worker = client.worker(stream, "billing", max_deliver=1)
        client.publish(f"orders.{tag}.created", body, headers=headers)
        client.fail_until_given_up(worker)
        deliveries = []
        deadline = time.monotonic() + 10
        while not deliveries and time.monotonic() < deadline:
            deliveries = link.fetch(limit=1, timeout=0.5)
        record = as_stored(link.record(deliveries[0]))
        link.ack(deliveries)
        return record
    finally:
        link.close()


def _bodies(client, stream, subject):
    return [(m.data, m.headers) for m in client.read_all(stream, subject)]


def test_a_drained_message_redriven_reaches_a_consumer_of_its_subject_once_unchanged(
    client, shared_url, orders, tag, nats_env
):
    headers = {"X-Trace": "t-1", "Content-Type": "application/json", "X-Note": "façade, naïve"}
    record = _dead_letter(client, shared_url, orders, tag, body=b'{"order": 1}', headers=headers)
    # A consumer started after the failure: what it gets is the redrive, and only that.
    receiver = client.run(
        client.js.pull_subscribe(
            f"orders.{tag}.>",
            durable="receiver",
            stream=orders,
            config=N.api.ConsumerConfig(deliver_policy=N.api.DeliverPolicy.NEW),
        )
    )

    assert _redrive(NS.publisher(), _message(record)) is None

    received = client.run(receiver.fetch(10, timeout=2))
    with pytest.raises(TimeoutError):
        client.run(receiver.fetch(10, timeout=0.5))
    (msg,) = received
    assert msg.subject == f"orders.{tag}.created"
    assert msg.data == b'{"order": 1}'
    nats_msg_id = msg.headers.pop("Nats-Msg-Id")
    assert msg.headers == headers
    assert nats_msg_id == M.dedupe_id(record["id"], f"orders.{tag}.created", b'{"order": 1}')


def test_a_retried_publish_is_stored_once(client, shared_url, orders, tag, nats_env):
    record = _dead_letter(client, shared_url, orders, tag, body=b"once", headers=None)
    handler = NS.publisher()
    # The first publish's acknowledgement lost in an outage, the engine retries the message.
    assert _redrive(handler, _message(record)) is None
    assert _redrive(handler, _message(record)) is None
    # The original (still in its stream) and one redrive.
    assert [b for b, _ in _bodies(client, orders, f"orders.{tag}.created")] == [b"once", b"once"]


def test_a_message_that_died_again_is_redriven_again(client, shared_url, orders, tag, nats_env):
    record = _dead_letter(client, shared_url, orders, tag, body=b"twice", headers=None)
    handler = NS.publisher()
    assert _redrive(handler, _message(record)) is None
    # Its redrive failed again (a new stream sequence): drained as a new message, new id.
    link = N.CONNECTOR.open(source_config(shared_url, orders))
    try:
        worker = client.worker(orders, "billing-2", max_deliver=1)
        client.fail_until_given_up(worker)
        again = [as_stored(link.record(d)) for d in link.fetch(limit=10, timeout=1)]
    finally:
        link.close()
    second = next(r for r in again if r["headers"]["nats-sequence"] == "2")
    assert second["id"] != record["id"]
    assert _redrive(handler, _message(second)) is None
    assert len(_bodies(client, orders, f"orders.{tag}.created")) == 3


def test_the_queues_subject_and_the_requests_target_win_over_the_origin(
    client, shared_url, orders, tag, nats_env
):
    record = _dead_letter(client, shared_url, orders, tag, body=b"elsewhere", headers=None)
    assert _redrive(NS.publisher(subject=f"orders.{tag}.fixed"), _message(record)) is None
    asked = json.dumps({"subject": f"orders.{tag}.asked"})
    assert _redrive(NS.publisher(subject=f"orders.{tag}.fixed"), _message(record, asked)) is None

    assert len(_bodies(client, orders, f"orders.{tag}.fixed")) == 1
    ((body, headers),) = _bodies(client, orders, f"orders.{tag}.asked")
    assert body == b"elsewhere"
    assert not any("antidote" in name.lower() for name in headers or {})


def test_a_message_from_elsewhere_is_published_without_antidotes_bookkeeping(
    client, orders, tag, nats_env
):
    message = Message(
        id="api-1",
        queue="orders-redrive",
        body=b"<order/>",
        content_type="application/xml",
        headers={"X-Trace": "t-9", "antidote-source": "api", "amqp-properties": "{}"},
    )
    assert _redrive(NS.publisher(subject=f"orders.{tag}.api"), message) is None
    ((body, headers),) = _bodies(client, orders, f"orders.{tag}.api")
    assert body == b"<order/>"
    headers.pop("Nats-Msg-Id")
    assert headers == {"X-Trace": "t-9", "Content-Type": "application/xml"}


def test_a_message_with_no_subject_fails_permanently(nats_env):
    message = Message(id="m", queue="q", body=b"x", content_type=None, headers={})
    with pytest.raises(NS.NoRedriveTarget):
        NS.publisher()(message)
    with pytest.raises(PermanentFailure, match="is not a NATS subject"):
        NS.publisher()(
            Message(
                id="m",
                queue="q",
                body=b"x",
                content_type=None,
                redrive_target=json.dumps({"subject": "a.*"}),
            )
        )


def test_a_subject_no_stream_stores_is_a_transient_failure(tag, nats_env):
    message = Message(id="m", queue="q", body=b"x", content_type=None, headers={})
    error = _redrive(NS.publisher(subject=f"nowhere.{tag}"), message)
    assert isinstance(error, NS.RedriveNoStream)
    assert not isinstance(error, PermanentFailure)
    assert f"no JetStream stream at 127.0.0.1:4222 stores subject 'nowhere.{tag}'" in str(error)


def test_publisher_options_are_checked():
    with pytest.raises(ValueError, match="subject must be a NATS subject"):
        NS.publisher(subject="orders.>")
    with pytest.raises(ValueError, match="ack_timeout must be a number of seconds more than 0"):
        NS.publisher(ack_timeout=0)
    with pytest.raises(ValueError, match="window must be a whole number"):
        NS.publisher(window=0)


def test_the_server_stopped_during_a_redrive_is_a_transient_failure_and_the_retry_works(
    own_server, monkeypatch
):
    monkeypatch.setenv("OUTAGE_NATS_URL", own_server.url)
    admin = Client(own_server.url)
    admin.add_stream("ORDERS", ["orders.>"])
    admin.close()
    handler = NS.publisher(url_env="OUTAGE_NATS_URL", subject="orders.created", ack_timeout=1)
    message = Message(id="m-1", queue="q", body=b"during", content_type=None, headers={})
    assert (
        _redrive(handler, Message(id="m-0", queue="q", body=b"before", content_type=None)) is None
    )

    before = handler(Message(id="m-2", queue="q", body=b"racing", content_type=None))
    own_server.pause()  # the server stops reading: what was written may or may not be stored
    during = handler(message)
    handler.settle()
    assert isinstance(during.error, NS.RedriveNotAcknowledged)
    assert "did not acknowledge the publish within 1 s" in str(during.error)
    assert not isinstance(during.error, PermanentFailure)
    own_server.kill()

    # While it is down, a publish fails at once, transiently.
    started = time.monotonic()
    with pytest.raises(NS.RedriveConnectionFailed, match=r"cannot connect to NATS at 127\.0\.0\.1"):
        handler(message)
    assert time.monotonic() - started < 5

    own_server.start()
    time.sleep(RECONNECT_PAUSE)
    assert _redrive(handler, message) is None
    if before.error is not None:
        assert (
            _redrive(handler, Message(id="m-2", queue="q", body=b"racing", content_type=None))
            is None
        )
    admin = Client(own_server.url)
    try:
        bodies = sorted(m.data for m in admin.read_all("ORDERS"))
    finally:
        admin.close()
    # Stored once, whether the publish during the outage reached the stream or not.
    assert bodies == [b"before", b"during", b"racing"]


def test_a_batch_larger_than_the_window_is_published_whole(client, orders, tag, nats_env):
    handler = NS.publisher(subject=f"orders.{tag}.many", window=3)
    deferreds = [
        handler(Message(id=f"m-{i}", queue="q", body=b"%d" % i, content_type=None))
        for i in range(10)
    ]
    handler.settle()
    assert [(d.settled, d.error) for d in deferreds] == [(True, None)] * 10
    assert sorted(b for b, _ in _bodies(client, orders, f"orders.{tag}.many")) == sorted(
        b"%d" % i for i in range(10)
    )


def test_a_header_nats_cannot_carry_fails_that_message_only(client, orders, tag, nats_env):
    handler = NS.publisher(subject=f"orders.{tag}.headers")
    bad = handler(
        Message(id="bad", queue="q", body=b"x", content_type=None, headers={"X Bad Name": "1"})
    )
    good = handler(Message(id="good", queue="q", body=b"y", content_type=None))
    handler.settle()
    assert isinstance(bad.error, PermanentFailure)
    assert "NATS cannot carry this message" in str(bad.error)
    assert good.error is None
    assert [b for b, _ in _bodies(client, orders, f"orders.{tag}.headers")] == [b"y"]
