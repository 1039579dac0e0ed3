"""The Redis Streams redrive handler: what a drained entry becomes when it is appended to its
stream again, where it goes, and which failures are transient."""

import json
import time

import pytest
import redis

from tests.brokers.records import as_stored
from tests.brokers.redis_streams.conftest import URL_ENV, link_of
from workers.brokers.redis_streams.sink import (
    NoRedriveTarget,
    RedriveConnectionFailed,
    RedriveRefused,
    publisher,
)
from workers.engine.handlers import HandlerImportError, Message, PermanentFailure, handler_build

pytestmark = pytest.mark.services

PATH = "workers.brokers.redis_streams.publisher"
IDLE_MS = 50


def _message(record, redrive_target=None):
    return Message(
        id=record["id"],
        queue="orders-redrive",
        body=record["body"],
        content_type=record.get("content_type", "application/octet-stream"),
        headers=record["headers"],
        redrive_target=redrive_target,
    )


def _drained(streams, stream, group, fields):
    """The record of an entry a consumer of `group` failed on three times, as the source makes
    it, acknowledged on the stream as after the lake commit."""
    streams.poisoned(stream, group, fields, reads=3)
    time.sleep(IDLE_MS * 2 / 1000)
    with link_of(stream, group=group, min_deliveries=3, min_idle_ms=IDLE_MS) as link:
        (delivery,) = link.fetch(limit=10, timeout=2)
        record = as_stored(link.record(delivery))
        link.ack([delivery])
    return record


def _sent(handler, *messages):
    """Call the handler for each message, settle, and return the outcome of each: None for
    done, or the exception it failed with."""
    deferreds = [handler(message) for message in messages]
    handler.settle()
    assert all(d.settled for d in deferreds)
    return [d.error for d in deferreds]


def _raw_client(url):
    client = redis.Redis.from_url(url)
    # The entry as Redis holds it: a dict would hide a name given twice.
    client.set_response_callback("XREADGROUP", lambda response, **options: response)
    return client


def _read_new(client, stream, group, consumer="worker-2"):
    """[(entry id, [(name, value), ...])] that `consumer` of `group` is given now."""
    reply = client.execute_command(
        "XREADGROUP", "GROUP", group, consumer, "COUNT", 100, "STREAMS", stream, ">"
    )
    if not reply:
        return []
    # RESP3 (redis-py's default) answers a map of stream to entries, RESP2 a list of pairs.
    ((_, entries),) = reply.items() if isinstance(reply, dict) else reply
    return [(i.decode(), list(zip(f[::2], f[1::2], strict=True))) for i, f in entries]


def test_it_appends_to_the_origin_stream_and_a_consumer_gets_it_once_fields_unchanged(streams):
    stream, group = streams.key("orders"), "billing"
    fields = [
        (b"tenant", b"acme"),
        (b"body", b'{"order": 7}'),
        (b"blob", b"\xff\x00"),
        (b"tenant", b"again"),
    ]
    record = _drained(streams, stream, group, fields)
    handler = publisher(url_env=URL_ENV)

    assert _sent(handler, _message(record)) == [None]

    client = _raw_client(streams.url)
    ((entry_id, received),) = _read_new(client, stream, group)
    assert received == [*fields, (b"antidote-message-id", record["id"].encode())]
    assert entry_id != record["headers"]["redis-entry-id"]
    assert _read_new(client, stream, group) == []  # once
    client.close()


def test_a_redriven_entry_that_dies_again_is_a_new_message_with_the_new_id_field(streams):
    stream, group = streams.key("orders"), "billing"
    first = _drained(streams, stream, group, {"body": "x"})
    handler = publisher(url_env=URL_ENV)
    _sent(handler, _message(first))
    # The redriven entry fails again (three reads by the group's consumer) and is drained.
    client = streams.client
    assert client.xreadgroup(group, "worker-1", {stream: ">"})
    for _ in range(2):
        client.xreadgroup(group, "worker-1", {stream: "0"})
    time.sleep(IDLE_MS * 2 / 1000)
    with link_of(stream, group=group, min_deliveries=3, min_idle_ms=IDLE_MS) as link:
        (delivery,) = link.fetch(limit=10, timeout=2)
        second = as_stored(link.record(delivery))

    assert second["id"] != first["id"]
    # The field the redrive wrote is the entry's, as any producer could have written it: kept
    # under a foreign name (R18).
    assert second["headers"]["x-foreign-antidote-message-id"] == first["id"]
    _sent(handler, _message(second))
    last = client.xrevrange(stream, count=1)[0][1]
    assert last[b"antidote-message-id"] == second["id"].encode()
    assert list(last).count(b"antidote-message-id") == 1


def test_the_request_names_a_stream_then_the_queue_then_the_origin(streams):
    origin, configured, requested = (streams.key(n) for n in ("origin", "configured", "asked"))
    record = _drained(streams, origin, "g", {"body": "b"})
    plain = _message(record)
    asked = _message(record, json.dumps({"stream": requested}))

    assert _sent(publisher(url_env=URL_ENV), plain) == [None]
    assert _sent(publisher(url_env=URL_ENV, stream=configured), plain, asked) == [None, None]

    def bodies(stream):
        return [f.get(b"body") for _, f in streams.client.xrange(stream)]

    assert bodies(origin) == [b"b", b"b"]  # the poisoned entry and its redrive
    assert bodies(configured) == [b"b"]
    assert bodies(requested) == [b"b"]
    sent = streams.client.xrange(requested)[0][1]
    assert not any(b"antidote-redrive" in name for name in sent)


def test_a_message_from_elsewhere_goes_out_as_its_body_under_the_body_field(streams):
    stream = streams.key("orders")
    message = Message(id="api-1", queue="q", body=b"hello", content_type="text/plain")
    assert _sent(publisher(url_env=URL_ENV, stream=stream, body_field="payload"), message) == [None]
    ((_, fields),) = streams.client.xrange(stream)
    assert fields == {b"payload": b"hello", b"antidote-message-id": b"api-1"}

    with pytest.raises(NoRedriveTarget, match="neither the request nor the queue"):
        publisher(url_env=URL_ENV)(message)


def test_fields_that_cannot_be_read_back_are_a_permanent_failure(streams):
    message = Message(
        id="m",
        queue="q",
        body=b"[1]",
        content_type="application/json",
        headers={"redis-stream": streams.key("s"), "redis-entry-id": "1-0"},
    )
    with pytest.raises(PermanentFailure, match="JSON object of text values"):
        publisher(url_env=URL_ENV)(message)


def test_redis_refusing_the_append_is_transient_and_the_rest_of_the_pipeline_goes_through(
    streams,
):
    not_a_stream, stream = streams.key("string"), streams.key("orders")
    streams.client.set(not_a_stream, "x")
    handler = publisher(url_env=URL_ENV, stream=stream, window=2)
    messages = [
        Message(id=f"m{i}", queue="q", body=b"%d" % i, content_type="text/plain") for i in range(5)
    ]
    outcomes = [handler(m) for m in messages[:2]]
    message = Message(
        id="bad",
        queue="q",
        body=b"",
        content_type="text/plain",
        redrive_target=json.dumps({"stream": not_a_stream}),
    )
    outcomes += [handler(message)]
    outcomes += [handler(m) for m in messages[2:]]
    handler.settle()

    errors = [d.error for d in outcomes]
    assert isinstance(errors[2], RedriveRefused)
    assert not isinstance(errors[2], PermanentFailure)
    assert "WRONGTYPE" in str(errors[2])
    assert errors[:2] + errors[3:] == [None] * 5


def test_redis_stopped_during_a_redrive_is_transient_and_the_retry_after_a_restart_works(
    own_redis, monkeypatch
):
    monkeypatch.setenv("OUTAGE_REDIS_URL", own_redis.url)
    monkeypatch.setattr("workers.brokers.base.RECONNECT_PAUSE", 0.5)
    handler = publisher(url_env="OUTAGE_REDIS_URL", stream="orders")
    message = Message(id="refund-1", queue="q", body=b"refund", content_type="text/plain")

    deferred = handler(message)  # queued in the pipeline, not yet sent
    own_redis.stop()
    handler.settle()
    assert isinstance(deferred.error, RedriveConnectionFailed)
    assert not isinstance(deferred.error, PermanentFailure)
    assert str(deferred.error).startswith(
        f"connection to Redis at 127.0.0.1:{own_redis.port}/0 failed before it answered"
    )
    # Within the pause the next call fails at once, for the same reason.
    with pytest.raises(RedriveConnectionFailed):
        handler(message)

    own_redis.start()
    time.sleep(0.6)
    assert _sent(handler, message) == [None]
    client = redis.Redis.from_url(own_redis.url)
    ((_, fields),) = client.xrange("orders")
    assert fields == {b"body": b"refund", b"antidote-message-id": b"refund-1"}
    client.close()


def test_an_unset_url_is_a_transient_failure_that_names_the_variable(monkeypatch):
    monkeypatch.delenv("NO_SUCH_REDIS_URL", raising=False)
    message = Message(id="m", queue="q", body=b"", content_type="text/plain")
    with pytest.raises(RedriveConnectionFailed, match="NO_SUCH_REDIS_URL is not set"):
        publisher(url_env="NO_SUCH_REDIS_URL", stream="s")(message)


@pytest.mark.parametrize(
    "options",
    [
        {"url_env": ""},
        {"stream": ""},
        {"id_field": ""},
        {"body_field": 3},
        {"timeout": 0},
        {"window": 0},
        {"exchange": "x"},
    ],
)
def test_bad_handler_options_are_refused_when_the_queue_is_loaded(options):
    with pytest.raises(HandlerImportError):
        handler_build(PATH, options)


def test_good_handler_options_build_without_connecting():
    handler = handler_build(PATH, {"url_env": "X_URL", "stream": "s", "window": 10})
    assert callable(handler)
