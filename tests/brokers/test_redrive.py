"""The redrive handler on the real RabbitMQ: called as the engine calls it (built from its queue's
handler_options, then deferred outcomes settled, in a forked isolation batch where it matters),
with a cuttable TCP proxy in front of the broker to play outages."""

import json
import uuid
from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal

import pika
import pytest

from tests.brokers.amqp_queues import messages_taken
from tests.brokers.records import as_stored
from tests.brokers.tcp_proxy import TcpProxy
from tests.conftest import require_service
from workers.brokers import base as connector
from workers.brokers.dead_letters import dead_letter_of, latest_death
from workers.brokers.rabbitmq import sink as redrive
from workers.brokers.rabbitmq.record import PROPERTIES_HEADER, record_of
from workers.engine.handlers import (
    Deferred,
    HandlerImportError,
    Message,
    PermanentFailure,
    handler_build,
)
from workers.engine.isolation import PERMANENT, SUCCESS, TRANSIENT, run_isolated

URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
PUBLISHER = "workers.brokers.redrive.publisher"
# pika reads an AMQP timestamp as an aware datetime in UTC.
DIED_AT = datetime(2026, 11, 24, 22, 40, tzinfo=UTC)


@pytest.fixture
def broker(monkeypatch):
    """A pika channel to the real broker; the queues and exchanges a test makes are deleted."""
    require_service("RabbitMQ", port=5672)
    monkeypatch.setenv("ANTIDOTE_AMQP_URL", URL)
    connection = pika.BlockingConnection(pika.URLParameters(URL))
    broker = _Broker(connection.channel())
    yield broker
    for queue in broker.queues:
        broker.channel.queue_delete(queue)
    for exchange in broker.exchanges:
        broker.channel.exchange_delete(exchange)
    connection.close()


@pytest.fixture
def proxy(broker, monkeypatch):
    proxy = TcpProxy()
    monkeypatch.setenv("PROXIED_AMQP_URL", f"amqp://guest:guest@{proxy.url_host}/%2F")
    yield proxy
    proxy.close()


class _Broker:
    def __init__(self, channel):
        self.channel = channel
        self.queues = []
        self.exchanges = []

    def queue(self, **arguments):
        name = f"antidote.test.redrive.{uuid.uuid4().hex}"
        self.channel.queue_declare(name, durable=True, arguments=arguments or None)
        self.queues.append(name)
        return name

    def exchange(self):
        name = f"antidote.test.shop.{uuid.uuid4().hex}"
        self.channel.exchange_declare(name, "direct", durable=True)
        self.exchanges.append(name)
        return name

    def drain(self, queue):
        """Every message in `queue`, as a pika consumer receives them: (properties, body)."""
        return messages_taken(self.channel, queue)


def _death(queue, exchange="", keys=None):
    # As pika decodes the x-death RabbitMQ writes.
    return {
        "count": 1,
        "reason": "rejected",
        "queue": queue,
        "time": DIED_AT,
        "exchange": exchange,
        "routing-keys": list(keys or [queue]),
    }


def _dead_lettered(body, *, queue, exchange="", keys=None, headers=None, **properties):
    """A message drained from a dead-letter queue, as ingest stores it, that died in `queue`."""
    death_headers = {
        "x-death": [_death(queue, exchange, keys)],
        "x-first-death-queue": queue,
        "x-first-death-exchange": exchange,
        "x-first-death-reason": "rejected",
    }
    received = pika.BasicProperties(headers={**(headers or {}), **death_headers}, **properties)
    return _message(_record(body, received))


def _record(body, properties):
    return as_stored(
        record_of(
            body=body, properties=properties, drained_from="orders.dlq", into="orders", source="dlq"
        )
    )


def _message(record):
    return Message(
        id=record["id"],
        queue=record["queue"],
        body=record["body"],
        content_type=record.get("content_type"),
        # As the engine hands them over: the headers' JSON text, parsed on first use.
        headers_json=json.dumps(record["headers"]),
    )


def _plain(n, body=None):
    """A message that did not come from RabbitMQ (ingested over HTTP, say)."""
    return Message(
        id=f"plain-{n}", queue="orders", body=body or b"%d" % n, content_type="text/plain"
    )


def _outcomes(handler, messages):
    """Call the handler on each message as the engine does, settle, and say what became of each:
    None for a success, else the exception."""
    outcomes = []
    for message in messages:
        try:
            outcomes.append(handler(message))
        except Exception as exc:
            outcomes.append(exc)
    deferred = [o for o in outcomes if isinstance(o, Deferred)]
    for settle in {id(d.settle): d.settle for d in deferred}.values():
        settle()
    assert all(d.settled for d in deferred)
    return [o.error if isinstance(o, Deferred) else o for o in outcomes]


def _kinds(value):
    # pika reads some integers as its own subclass of int: an integer all the same.
    if isinstance(value, dict):
        return {k: _kinds(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_kinds(v) for v in value]
    return int if type(value) is not bool and isinstance(value, int) else type(value)


def _ids(received):
    return Counter(properties.message_id for properties, _ in received)


# --- Where a message goes -----------------------------------------------------------------------


def test_it_publishes_a_dead_lettered_message_back_to_its_queue_once_as_it_was(broker):
    orders = broker.queue()
    body = b'{"order": 7, "note": "\xc3\xa9t\xc3\xa9"}\x00\xff'
    headers = {"tenant": "acme", "attempt": 3, "vip": True, "raw": b"\x00\xff"}
    message = _dead_lettered(
        body,
        queue=orders,
        headers=headers,
        content_type="application/json",
        content_encoding="utf-8",
        delivery_mode=2,
        priority=3,
        correlation_id="order-7",
        reply_to="orders.replies",
        message_id="order-7-created",
        timestamp=1_790_000_000,
        type="order.created",
        app_id="shop",
        user_id="someone-else",
        expiration="600000",
    )
    handler = handler_build(PUBLISHER, {})

    assert _outcomes(handler, [message]) == [None]

    [(properties, received_body)] = broker.drain(orders)
    assert received_body == body
    assert (
        properties.content_type,
        properties.content_encoding,
        properties.delivery_mode,
        properties.priority,
        properties.correlation_id,
        properties.reply_to,
        properties.message_id,
        properties.timestamp,
        properties.type,
        properties.app_id,
        properties.expiration,
    ) == (
        "application/json",
        "utf-8",
        2,
        3,
        "order-7",
        "orders.replies",
        "order-7-created",
        1_790_000_000,
        "order.created",
        "shop",
        "600000",
    )
    # RabbitMQ refuses a user_id that is not the publishing connection's user: it is dropped.
    assert properties.user_id is None
    assert properties.headers == {
        "tenant": "acme",
        "attempt": 3,
        "vip": True,
        "raw": b"\x00\xff",
        "x-death": [
            {
                "count": 1,
                "reason": "rejected",
                "queue": orders,
                "time": DIED_AT,
                "exchange": "",
                "routing-keys": [orders],
            }
        ],
        "x-first-death-queue": orders,
        "x-first-death-exchange": "",
        "x-first-death-reason": "rejected",
    }


def test_header_values_of_each_amqp_type_reach_a_pika_consumer_as_the_original_one_saw_them(
    broker,
):
    source, orders = broker.queue(), broker.queue()
    sent = {
        "text": "été",
        "bytes": b"\x00\xff",
        "utf8 bytes": b"abc",
        "true": True,
        "false": False,
        "small": 7,
        "lowest int32": -(2**31),
        "large": 2**40,
        "negative large": -(2**40),
        "decimal": Decimal("12.50"),
        "decimal exponent": Decimal("1E+2"),
        "time": datetime(2026, 11, 1, 12, 0, 5, tzinfo=UTC),
        "table": {"a": 1, "b": [1, "x"], "c": {"d": b"\x01"}},
        "array": [1, "two", b"three", None, True, Decimal("0.5")],
        "void": None,
    }
    broker.channel.basic_publish(
        "", source, b"{}", pika.BasicProperties(headers=sent, content_type="application/json")
    )
    # The original consumer's view, and the one the drain stored.
    [(original, body)] = broker.drain(source)
    original.headers["x-death"] = [_death(orders)]
    message = _message(_record(body, original))

    assert _outcomes(handler_build(PUBLISHER, {}), [message]) == [None]

    [(properties, _)] = broker.drain(orders)
    assert properties.headers == original.headers
    assert properties.headers == {**sent, "x-death": [_death(orders)]}
    # == takes 1 for True (and Decimal for int): the kinds of values are the same too.
    assert _kinds(properties.headers) == _kinds(original.headers)
    assert type(properties.headers["utf8 bytes"]) is bytes


def test_it_reaches_only_the_queue_the_message_died_in_not_others_bound_to_its_exchange(broker):
    shop = broker.exchange()
    orders, audit = broker.queue(), broker.queue()
    broker.channel.queue_bind(orders, shop, "order.created")
    broker.channel.queue_bind(audit, shop, "order.created")
    message = _dead_lettered(b"order", queue=orders, exchange=shop, keys=["order.created"])

    assert _outcomes(handler_build(PUBLISHER, {}), [message]) == [None]

    assert [body for _, body in broker.drain(orders)] == [b"order"]
    assert broker.drain(audit) == []


def test_target_original_exchange_publishes_with_its_exchange_and_first_routing_key(broker):
    shop = broker.exchange()
    orders, audit, other = broker.queue(), broker.queue(), broker.queue()
    broker.channel.queue_bind(orders, shop, "order.created")
    broker.channel.queue_bind(audit, shop, "order.created")
    broker.channel.queue_bind(other, shop, "order.paid")
    message = _dead_lettered(
        b"order", queue=orders, exchange=shop, keys=["order.created", "order.paid"]
    )
    handler = handler_build(PUBLISHER, {"target": "original_exchange"})

    assert _outcomes(handler, [message]) == [None]

    assert [body for _, body in broker.drain(orders)] == [b"order"]
    assert [body for _, body in broker.drain(audit)] == [b"order"]
    assert broker.drain(other) == []


def test_exchange_and_routing_key_options_win_over_the_dead_letter_record(broker):
    retries = broker.exchange()
    orders, retry = broker.queue(), broker.queue()
    broker.channel.queue_bind(retry, retries, "later")
    handler = handler_build(PUBLISHER, {"exchange": retries, "routing_key": "later"})

    outcomes = _outcomes(handler, [_dead_lettered(b"dead", queue=orders), _plain(1)])

    assert outcomes == [None, None]
    assert [body for _, body in broker.drain(retry)] == [b"dead", b"1"]
    assert broker.drain(orders) == []


def _with_target(message, target):
    """`message` as a reprocess with a redrive target of its own hands it to the sink: the
    target in its `redrive_target` (console.decisions.execution)."""
    return Message(
        id=message.id,
        queue=message.queue,
        body=message.body,
        content_type=message.content_type,
        headers_json=json.dumps(message.headers),
        redrive_target=json.dumps(target),
    )


def test_a_requests_own_exchange_and_routing_key_win_over_the_queue_and_the_origin(broker):
    retries, configured = broker.exchange(), broker.exchange()
    orders, retry, elsewhere = broker.queue(), broker.queue(), broker.queue()
    broker.channel.queue_bind(retry, retries, "later")
    broker.channel.queue_bind(elsewhere, configured, "k")
    handler = handler_build(PUBLISHER, {"exchange": configured, "routing_key": "k"})
    target = {"exchange": retries, "routing_key": "later"}

    outcomes = _outcomes(
        handler,
        [
            _with_target(_dead_lettered(b"dead", queue=orders), target),
            _with_target(_plain(1), target),
        ],
    )

    assert outcomes == [None, None]
    received = broker.drain(retry)
    assert [body for _, body in received] == [b"dead", b"1"]
    # The target is Antidote's bookkeeping: it does not go out with the message.
    assert all(not any("antidote" in h for h in p.headers or {}) for p, _ in received)
    assert broker.drain(orders) == []
    assert broker.drain(elsewhere) == []


def test_a_requests_routing_key_with_the_default_exchange_reaches_that_queue(broker):
    orders, retry = broker.queue(), broker.queue()
    handler = handler_build(PUBLISHER, {})
    message = _with_target(
        _dead_lettered(b"dead", queue=orders), {"exchange": "", "routing_key": retry}
    )

    assert _outcomes(handler, [message]) == [None]

    assert [body for _, body in broker.drain(retry)] == [b"dead"]
    assert broker.drain(orders) == []


def test_a_target_for_another_broker_leaves_the_message_to_its_origin(broker):
    orders = broker.queue()
    handler = handler_build(PUBLISHER, {})
    message = _with_target(_dead_lettered(b"dead", queue=orders), {"subject": "orders.retry"})

    assert _outcomes(handler, [message]) == [None]

    assert [body for _, body in broker.drain(orders)] == [b"dead"]


def test_a_routing_key_alone_goes_through_the_default_exchange(broker):
    retry = broker.queue()
    handler = handler_build(PUBLISHER, {"routing_key": retry})

    assert _outcomes(handler, [_plain(1, b"edited body")]) == [None]

    [(properties, body)] = broker.drain(retry)
    assert body == b"edited body"
    # Not from RabbitMQ: persistent, with Antidote's content type and id.
    assert (properties.delivery_mode, properties.content_type, properties.message_id) == (
        2,
        "text/plain",
        "plain-1",
    )
    assert properties.headers is None


def test_a_message_with_no_content_type_goes_out_without_one(broker):
    retry = broker.queue()
    message = Message(id="plain-1", queue="orders", body=b"1", content_type="")

    assert _outcomes(handler_build(PUBLISHER, {"routing_key": retry}), [message]) == [None]

    [(properties, _)] = broker.drain(retry)
    assert (properties.content_type, properties.message_id) == (None, "plain-1")


def test_a_message_with_no_dead_letter_record_and_no_target_fails_permanently(broker):
    result = run_isolated([_plain(1)], handler_build(PUBLISHER, {}))

    assert result.codes == [PERMANENT]
    reason, exception_type, _ = result.failures[0]
    assert exception_type == "NoRedriveTarget"
    assert reason == (
        "no x-death record of a RabbitMQ source says where it came from and the queue sets "
        "no exchange/routing_key"
    )


def test_an_x_death_a_producer_wrote_does_not_say_where_a_message_goes(broker):
    # Sent in over the API with a death record of its own: no RabbitMQ source drained it (R18).
    victim = broker.queue()
    forged = Message(
        id="api-1",
        queue="orders",
        body=b"1",
        content_type="text/plain",
        headers={"x-death": _x_death((victim, "", [victim])), "x-first-death-queue": victim},
    )

    result = run_isolated([forged], handler_build(PUBLISHER, {}))

    assert result.codes == [PERMANENT]
    assert result.failures[0][1] == "NoRedriveTarget"
    assert broker.drain(victim) == []


def test_properties_that_cannot_be_read_fail_permanently(broker):
    orders = broker.queue()
    message = _dead_lettered(b"x", queue=orders)
    message.headers[PROPERTIES_HEADER] = '["not", "an object"]'

    [failure] = _outcomes(handler_build(PUBLISHER, {"routing_key": orders}), [message])

    assert isinstance(failure, PermanentFailure)
    assert "AMQP properties" in str(failure)
    assert broker.drain(orders) == []


def _x_death(*deaths):
    return json.dumps(
        [
            {"count": 1, "reason": "rejected", "queue": q, "exchange": e, "routing-keys": keys}
            for q, e, keys in deaths
        ]
    )


@pytest.mark.parametrize(
    "headers",
    [
        {"x-death": _x_death(("orders", "shop", ["order.created", "order.paid"]))},
        {"x-death": _x_death(("retry", "", ["retry"]), ("orders", "shop", ["order.created"]))},
        {"X-Death": _x_death(("orders", "shop", ["k"]))},
        {"X-Death": _x_death(("first", "", ["a"])), "x-death": _x_death(("second", "", ["b"]))},
        {
            "x-death": '[{"count": 1, "queue": "orders", "exchange": "shop"}]',
            "x-first-death-queue": "first",
            "x-first-death-exchange": "shop",
        },
        {"x-death": "not json", "x-last-death-queue": "last", "x-last-death-exchange": ""},
        {"x-first-death-queue": "orders", "x-first-death-exchange": "shop"},
        {"__connect.errors.topic": "orders", "__connect.errors.partition": "3"},
        {"tenant": "acme"},
        {},
    ],
)
def test_it_reads_where_a_message_died_as_the_dead_letter_reader_does(headers):
    record = dead_letter_of(headers)
    expected = (None, None, ())
    if record is not None:
        expected = (record.original_queue, record.original_exchange, record.original_routing_keys)

    assert latest_death(headers) == expected


# --- What RabbitMQ says -------------------------------------------------------------------------


def test_an_unroutable_message_fails_transient_naming_exchange_and_key_the_rest_succeed(broker):
    orders = broker.queue()
    gone = f"antidote.test.deleted.{uuid.uuid4().hex}"
    messages = [
        _dead_lettered(b"1", queue=orders),
        _dead_lettered(b"2", queue=gone),
        _dead_lettered(b"3", queue=orders),
        _dead_lettered(b"2", queue=gone, message_id="again"),
        _dead_lettered(b"2", queue=orders),
    ]

    result = run_isolated(messages, handler_build(PUBLISHER, {"window": 2}))

    assert result.codes == [SUCCESS, TRANSIENT, SUCCESS, TRANSIENT, SUCCESS]
    for index in (1, 3):
        reason, exception_type, _ = result.failures[index]
        assert exception_type == "RedriveUnroutable"
        assert reason == (
            f"no queue bound for exchange '' (the default exchange) routing key '{gone}': "
            "312 NO_ROUTE"
        )
    assert [body for _, body in broker.drain(orders)] == [b"1", b"3", b"2"]


def test_a_publish_the_queue_refuses_is_nacked_and_fails_transient(broker):
    tiny = broker.queue(**{"x-max-length": 1, "x-overflow": "reject-publish"})

    result = run_isolated(
        [_dead_lettered(b"%d" % n, queue=tiny) for n in range(3)], handler_build(PUBLISHER, {})
    )

    assert result.codes == [SUCCESS, TRANSIENT, TRANSIENT]
    reason, exception_type, _ = result.failures[1]
    assert exception_type == "RedriveNotConfirmed"
    assert reason.startswith("RabbitMQ refused the publish (nack)")
    assert [body for _, body in broker.drain(tiny)] == [b"0"]


def test_a_missing_exchange_fails_the_batch_transient(broker):
    handler = handler_build(PUBLISHER, {"exchange": f"antidote.test.none.{uuid.uuid4().hex}"})

    result = run_isolated([_plain(1), _plain(2)], handler)

    assert result.codes == [TRANSIENT, TRANSIENT]
    reason, exception_type, _ = result.failures[0]
    assert exception_type == "RedriveConnectionFailed"
    assert "closed the channel before confirming" in reason
    assert "NOT_FOUND" in reason


def test_more_messages_than_the_window_each_arrive_once(broker):
    orders = broker.queue()
    messages = [_dead_lettered(b"%d" % n, queue=orders, message_id=f"m{n}") for n in range(500)]

    result = run_isolated(messages, handler_build(PUBLISHER, {"window": 7}))

    assert result.codes == [SUCCESS] * 500
    assert _ids(broker.drain(orders)) == Counter(f"m{n}" for n in range(500))


# --- Connections ---------------------------------------------------------------------------------


def test_a_missing_url_variable_is_a_transient_failure_naming_it(broker, monkeypatch):
    monkeypatch.delenv("ANTIDOTE_TEST_NO_URL", raising=False)
    orders = broker.queue()
    handler = handler_build(PUBLISHER, {"url_env": "ANTIDOTE_TEST_NO_URL"})

    result = run_isolated([_dead_lettered(b"x", queue=orders)], handler)

    assert result.codes == [TRANSIENT]
    assert result.failures[0][:2] == ("ANTIDOTE_TEST_NO_URL is not set", "RedriveConnectionFailed")


@pytest.mark.parametrize(
    "url",
    [
        # A '/' or '#' in the password ends the host part early: the port would be "pass", or
        # the host "guest" and the vhost "word@127.0.0.1...".
        "amqp://guest:pass/word@127.0.0.1:5672/",
        "amqp://guest/password@127.0.0.1:5672/",
        "amqp://guest:pass#word@127.0.0.1:5672/",
        "http://guest:password@127.0.0.1:5672/",
    ],
)
def test_a_url_that_does_not_parse_is_not_repeated_in_the_failure(broker, monkeypatch, url):
    monkeypatch.setenv("ANTIDOTE_TEST_BAD_URL", url)
    handler = handler_build(PUBLISHER, {"url_env": "ANTIDOTE_TEST_BAD_URL", "routing_key": "q"})

    [failure] = _outcomes(handler, [_plain(1)])

    assert isinstance(failure, redrive.RedriveConnectionFailed)
    assert str(failure) == (
        "ANTIDOTE_TEST_BAD_URL is not an AMQP URL of the form amqp://user:password@host:port/vhost"
    )


def test_wrong_credentials_are_a_transient_failure_that_does_not_show_them(broker, monkeypatch):
    monkeypatch.setenv("ANTIDOTE_AMQP_URL", "amqp://guest:hunter2-secret@127.0.0.1:5672/%2F")
    orders = broker.queue()

    result = run_isolated([_dead_lettered(b"x", queue=orders)], handler_build(PUBLISHER, {}))

    assert result.codes == [TRANSIENT]
    reason, exception_type, stack = result.failures[0]
    assert exception_type == "RedriveConnectionFailed"
    assert reason.startswith("cannot connect to RabbitMQ at 127.0.0.1:5672/%2F: ")
    assert "ACCESS_REFUSED" in reason
    assert "hunter2" not in reason + stack


def test_a_broker_that_is_down_is_a_transient_failure_naming_host_and_port_only(
    broker, proxy, monkeypatch
):
    monkeypatch.setenv("PROXIED_AMQP_URL", f"amqp://guest:hunter2-secret@{proxy.url_host}/%2F")
    orders = broker.queue()
    proxy.cut()
    handler = handler_build(PUBLISHER, {"url_env": "PROXIED_AMQP_URL"})

    result = run_isolated([_dead_lettered(b"%d" % n, queue=orders) for n in range(3)], handler)

    assert result.codes == [TRANSIENT] * 3
    for reason, exception_type, stack in result.failures.values():
        assert exception_type == "RedriveConnectionFailed"
        assert reason.startswith(f"cannot connect to RabbitMQ at {proxy.url_host}/%2F: ")
        assert "Connection refused" in reason
        assert "hunter2" not in reason + stack
    assert broker.drain(orders) == []


def test_a_connection_cut_mid_batch_fails_only_the_unconfirmed_and_nothing_confirmed_repeats(
    broker, proxy
):
    orders = broker.queue()
    messages = [_dead_lettered(b"%d" % n, queue=orders, message_id=f"m{n}") for n in range(100)]
    handler = handler_build(PUBLISHER, {"url_env": "PROXIED_AMQP_URL", "window": 10})
    calls = 0

    def cut_after_50(message):
        nonlocal calls
        calls += 1
        outcome = handler(message)
        if calls == 50:
            proxy.cut()  # from the batch's child process: the proxy's owner does it
        return outcome

    first = run_isolated(messages, cut_after_50)

    confirmed = first.codes.count(SUCCESS)
    # The window keeps at most 10 waiting: 40 were confirmed before the cut, in order.
    assert 40 <= confirmed <= 50
    assert first.codes == [SUCCESS] * confirmed + [TRANSIENT] * (100 - confirmed)
    for reason, exception_type, _ in first.failures.values():
        assert exception_type == "RedriveConnectionFailed"
        assert f"RabbitMQ at {proxy.url_host}/%2F" in reason
    assert any("lost before the broker confirmed" in f[0] for f in first.failures.values())

    proxy.restore()
    failed = [m for m, code in zip(messages, first.codes, strict=True) if code == TRANSIENT]
    second = run_isolated(failed, handler)

    assert second.codes == [SUCCESS] * len(failed)
    held = _ids(broker.drain(orders))
    assert set(held) == {f"m{n}" for n in range(100)}
    # Only a publish whose confirm was lost in the cut may be there twice.
    assert {f"m{n}" for n in range(confirmed)} <= {i for i, count in held.items() if count == 1}
    assert sum(held.values()) <= 100 + 10


def test_after_a_cut_the_next_call_in_the_same_process_reconnects(broker, proxy, monkeypatch):
    monkeypatch.setattr(connector, "RECONNECT_PAUSE", 0)
    orders = broker.queue()
    handler = handler_build(PUBLISHER, {"url_env": "PROXIED_AMQP_URL"})

    assert _outcomes(handler, [_dead_lettered(b"1", queue=orders)]) == [None]
    proxy.cut()
    [down] = _outcomes(handler, [_dead_lettered(b"2", queue=orders)])
    proxy.restore()
    outcomes = _outcomes(handler, [_dead_lettered(b"3", queue=orders)])

    assert isinstance(down, redrive.RedriveConnectionFailed)
    assert outcomes == [None]
    assert [body for _, body in broker.drain(orders)] == [b"1", b"3"]


def test_a_failed_connect_is_not_tried_again_by_every_call_of_the_batch(broker, proxy):
    handler = handler_build(PUBLISHER, {"url_env": "PROXIED_AMQP_URL", "routing_key": "q"})
    proxy.cut()

    failures = _outcomes(handler, [_plain(n) for n in range(3)])
    proxy.restore()
    still = _outcomes(handler, [_plain(4)])

    assert [type(f) for f in failures] == [redrive.RedriveConnectionFailed] * 3
    assert len({str(f) for f in failures}) == 1
    assert str(still[0]) == str(failures[0])


def test_a_broker_that_stops_answering_fails_the_unconfirmed_after_confirm_timeout(broker, proxy):
    orders = broker.queue()
    handler = handler_build(PUBLISHER, {"url_env": "PROXIED_AMQP_URL", "confirm_timeout": 0.5})
    first = handler(_dead_lettered(b"1", queue=orders))
    proxy.stall()
    second = handler(_dead_lettered(b"2", queue=orders))

    second.settle()

    # The first one's confirm may have come through before the stall.
    assert first.settled and (first.error is None or "did not confirm" in str(first.error))
    assert isinstance(second.error, redrive.RedriveNotConfirmed)
    assert str(second.error) == (
        f"RabbitMQ at {proxy.url_host}/%2F did not confirm the publish within 0.5 s"
    )


def test_a_handler_that_published_in_the_parent_opens_its_own_connection_in_a_child(broker):
    orders = broker.queue()
    handler = handler_build(PUBLISHER, {})
    parent = handler(_dead_lettered(b"parent", queue=orders))

    child = run_isolated([_dead_lettered(b"child", queue=orders)], handler)
    parent.settle()

    assert child.codes == [SUCCESS]
    assert (parent.settled, parent.error) == (True, None)
    assert sorted(body for _, body in broker.drain(orders)) == [b"child", b"parent"]


# --- Options ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"target": "somewhere"},
        {"window": 0},
        {"confirm_timeout": 0},
        {"exchange": 5},
        {"url_env": ""},
        {"password": "x"},
    ],
)
def test_the_factory_refuses_bad_options(options):
    with pytest.raises(HandlerImportError):
        handler_build(PUBLISHER, options)


def test_building_the_handler_connects_to_nothing(monkeypatch):
    monkeypatch.delenv("ANTIDOTE_TEST_NO_URL", raising=False)

    handler = handler_build(PUBLISHER, {"url_env": "ANTIDOTE_TEST_NO_URL", "window": 5})

    assert callable(handler)
