"""The HTTP delivery handler against a real local receiver: built from its queue's
handler_options as the engine builds it, then called (in this process, or forked as the engine
calls it)."""

import base64
import hashlib
import hmac
import json
import socket
import time
from email.utils import formatdate

import pytest
from standardwebhooks import Webhook

from tests.brokers.http.conftest import SECRET
from tests.brokers.http.receiver import Answer
from workers.brokers import http
from workers.engine.handlers import (
    RETRY_AFTER_LIMIT,
    HandlerImportError,
    Message,
    PermanentFailure,
    TransientFailure,
    handler_build,
)
from workers.engine.isolation import PERMANENT, SUCCESS, TRANSIENT, run_isolated

POSTER = "workers.brokers.http.poster"
ORDER = b'{"order": 42, "note": "caf\xc3\xa9"}'
OWN_HEADERS = {"x-tenant": "acme", "traceparent": "00-abc-def-01", "x-note": "café"}


def _poster(**options):
    return handler_build(POSTER, options)


def _message(
    body=ORDER, headers=None, id="m-1", content_type="application/json", redrive_target=None
):
    return Message(
        id=id,
        queue="orders.http",
        body=body,
        content_type=content_type,
        headers=dict(OWN_HEADERS if headers is None else headers),
        redrive_target=redrive_target,
    )


def _verified(received):
    """The received request's signature, checked as a receiver checks it."""
    headers = {name: value for name, value in received.headers}
    Webhook(SECRET).verify(received.body, headers, json_parse=False)
    return headers


def test_500_then_429_with_retry_after_then_200_is_two_transient_failures_then_success(
    receiver, secret
):
    server = receiver(
        Answer(500, b"database down"),
        Answer(429, headers={"Retry-After": "120"}),
        Answer(200, b"ok"),
    )
    poster = _poster(url=server.url)

    with pytest.raises(http.DeliveryFailed) as first:
        poster(_message())
    assert str(first.value) == f"http://127.0.0.1:{server.port} answered 500 Internal Server Error"
    assert first.value.retry_after is None

    with pytest.raises(http.DeliveryFailed) as second:
        poster(_message())
    assert str(second.value) == (
        f"http://127.0.0.1:{server.port} answered 429 Too Many Requests; Retry-After 120 s"
    )
    assert second.value.retry_after == 120.0

    assert poster(_message()) is None
    assert len(server.received) == 3
    for received in server.received:
        headers = _verified(received)
        assert received.path == "/hooks/orders"
        assert received.body == ORDER
        assert headers["webhook-id"] == "m-1"
        assert headers["Content-Type"] == "application/json"
        assert headers["x-tenant"] == "acme"
        assert headers["traceparent"] == "00-abc-def-01"
        # http.server reads header values as Latin-1: the UTF-8 bytes sent read back as text.
        assert headers["x-note"].encode("latin-1").decode("utf-8") == "café"


def test_422_is_permanent_with_the_status_and_the_first_bytes_of_the_answer(receiver, secret):
    answer = b'{"error": "customer is required"}\n' + b"x" * 500
    server = receiver(Answer(422, answer))
    with pytest.raises(http.DeliveryRefused) as refused:
        _poster(url=server.url)(_message())
    reason = str(refused.value)
    assert reason.startswith(
        f'http://127.0.0.1:{server.port} answered 422 Unprocessable Entity: {{"error": '
        '"customer is required"} xxx'
    )
    # 200 bytes of the answer, its newline made a space.
    assert reason.endswith(": " + answer[:200].decode().replace("\n", " "))
    assert refused.value.exception_type == "http.422"
    assert isinstance(refused.value, PermanentFailure)
    _verified(server.received[0])


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
def test_408_429_and_5xx_are_transient(receiver, secret, status):
    server = receiver(Answer(status))
    with pytest.raises(http.DeliveryFailed):
        _poster(url=server.url)(_message())


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 410, 413, 301, 302, 307])
def test_other_4xx_and_redirects_are_permanent_and_a_redirect_is_not_followed(
    receiver, secret, status
):
    elsewhere = receiver(Answer(200))
    server = receiver(Answer(status, headers={"Location": elsewhere.url}))
    with pytest.raises(http.DeliveryRefused) as refused:
        _poster(url=server.url)(_message())
    assert f"answered {status}" in str(refused.value)
    assert elsewhere.received == []


def test_every_2xx_is_success(receiver, secret):
    server = receiver(Answer(202), Answer(204), Answer(201, b"created"))
    poster = _poster(url=server.url)
    for _ in range(3):
        assert poster(_message()) is None


def test_a_2xx_whose_answer_breaks_midway_is_still_a_success(receiver, secret):
    server = receiver(Answer(200, b"partial", cut=True), Answer(200))
    poster = _poster(url=server.url)
    assert poster(_message()) is None
    assert poster(_message()) is None  # on a new connection
    assert len(server.received) == 2


def test_a_retry_after_date_gives_the_seconds_until_it(receiver, secret):
    server = receiver(
        Answer(503, headers={"Retry-After": formatdate(time.time() + 600, usegmt=True)})
    )
    with pytest.raises(http.DeliveryFailed) as failed:
        _poster(url=server.url)(_message())
    assert 590 <= failed.value.retry_after <= 601


def test_retry_after_values():
    now = 1_780_000_000.0
    assert http.retry_after_of("0", now=now) == 0.0
    assert http.retry_after_of(" 3600 ", now=now) == 3600.0
    assert http.retry_after_of(formatdate(now + 90, usegmt=True), now=now) == 90.0
    assert http.retry_after_of(formatdate(now - 90, usegmt=True), now=now) == 0.0
    assert http.retry_after_of("9" * 40, now=now) == float("inf")
    assert TransientFailure("x", retry_after=float("inf")).retry_after == RETRY_AFTER_LIMIT
    for unreadable in (None, "", "soon", "-5", "1.5", "Wed, 99 Foo 2026 00:00:00 GMT", "٣"):
        assert http.retry_after_of(unreadable, now=now) is None


def test_a_receiver_that_does_not_answer_in_time_is_a_transient_failure(receiver, secret):
    server = receiver(Answer(200, delay=2.0))
    started = time.monotonic()
    with pytest.raises(http.DeliveryFailed) as failed:
        _poster(url=server.url, timeout=0.3)(_message())
    assert time.monotonic() - started < 1.5
    assert str(failed.value) == f"http://127.0.0.1:{server.port} did not answer within 0.3 s"


def test_a_receiver_that_is_not_there_is_a_transient_failure(secret, outbound_allow):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    outbound_allow(f"127.0.0.1:{port}")
    with pytest.raises(http.DeliveryFailed) as failed:
        _poster(url=f"http://127.0.0.1:{port}/hooks")(_message())
    assert str(failed.value) == f"cannot reach http://127.0.0.1:{port}: Connection refused"


def test_antidotes_bookkeeping_headers_stay_home_and_content_type_is_the_messages(receiver, secret):
    server = receiver(Answer(200))
    headers = {
        "x-death": '[{"queue": "orders"}]',
        "__connect.errors.topic": "orders",
        "amqp-properties": '{"headers": {}}',
        "antidote-source": "rabbitmq",
        "x-foreign-antidote-redrive-target": json.dumps({"url": "http://attacker.test/"}),
        "nats-stream": "ORDERS",
        "redis-entry-id": "1-0",
        "Content-Type": "text/plain",
        "Content-Length": "1",
        "Host": "elsewhere.example",
        "Webhook-Signature": "v1,forged",
    }
    _poster(url=server.url)(_message(headers=headers, content_type="application/xml"))
    sent = {name.lower(): value for name, value in server.received[0].headers}
    assert sent["x-death"] == '[{"queue": "orders"}]'
    assert sent["__connect.errors.topic"] == "orders"
    assert sent["content-type"] == "application/xml"
    assert sent["host"] == f"127.0.0.1:{server.port}"
    for gone in ("amqp-properties", "antidote-source", "nats-stream"):
        assert gone not in sent
    # A producer's header set aside at ingest is the producer's: it goes on, as data.
    assert sent["x-foreign-antidote-redrive-target"] == '{"url": "http://attacker.test/"}'
    assert "redis-entry-id" not in sent
    _verified(server.received[0])


def test_a_message_without_a_content_type_goes_as_octet_stream(receiver, secret):
    server = receiver(Answer(200))
    _poster(url=server.url)(_message(content_type=""))
    assert server.received[0].header("Content-Type") == "application/octet-stream"


def test_a_binary_body_is_signed_over_its_bytes(receiver, secret):
    server = receiver(Answer(200))
    body = bytes(range(256))
    _poster(url=server.url)(_message(body=body, content_type="application/octet-stream"))
    received = server.received[0]
    assert received.body == body
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    signed = f"m-1.{received.header('webhook-timestamp')}.".encode() + body
    expected = hmac.new(key, signed, hashlib.sha256).digest()
    version, signature = received.header("webhook-signature").split(",")
    assert version == "v1"
    assert hmac.compare_digest(expected, base64.b64decode(signature))


def test_a_request_that_names_a_url_goes_there(receiver, secret):
    queue_server = receiver(Answer(200))
    requested = receiver(Answer(200))
    target = json.dumps({"url": requested.url})
    _poster(url=queue_server.url)(_message(redrive_target=target))
    assert (len(queue_server.received), len(requested.received)) == (0, 1)


def test_the_url_can_come_from_the_environment_and_is_never_repeated(receiver, secret, monkeypatch):
    server = receiver(Answer(500))
    monkeypatch.setenv("ORDERS_HOOK_URL", f"http://127.0.0.1:{server.port}/hooks/t0ken-s3cret")
    with pytest.raises(http.DeliveryFailed) as failed:
        _poster(url_env="ORDERS_HOOK_URL")(_message())
    assert "t0ken-s3cret" not in str(failed.value)
    assert server.received[0].path == "/hooks/t0ken-s3cret"

    monkeypatch.delenv("ORDERS_HOOK_URL")
    with pytest.raises(http.DeliveryFailed, match="ORDERS_HOOK_URL is not set"):
        _poster(url_env="ORDERS_HOOK_URL")(_message())
    # A request that names its own URL needs none from the environment.
    requested = receiver(Answer(200))
    target = json.dumps({"url": requested.url})
    _poster(url_env="ORDERS_HOOK_URL")(_message(redrive_target=target))
    assert len(requested.received) == 1


def test_an_unusable_requested_url_is_permanent_and_not_repeated(secret, outbound_allow):
    outbound_allow("127.0.0.1:1")  # the queue's own URL, never sent to here
    target = json.dumps({"url": "ftp://user:s3cret@files.example/x"})
    with pytest.raises(http.NoDeliveryUrl) as failed:
        _poster(url="http://127.0.0.1:1/")(_message(redrive_target=target))
    assert str(failed.value) == "the delivery URL must start with http:// or https://"
    with pytest.raises(http.NoDeliveryUrl, match="no URL"):
        _poster()(_message())


@pytest.mark.parametrize("value", [None, "", "secret", "whsec_", "whsec_!!!not base64"])
def test_without_a_usable_secret_nothing_is_sent_and_the_secret_is_not_repeated(
    receiver, monkeypatch, value
):
    server = receiver(Answer(200))
    if value is None:
        monkeypatch.delenv("ANTIDOTE_WEBHOOK_SECRET", raising=False)
    else:
        monkeypatch.setenv("ANTIDOTE_WEBHOOK_SECRET", value)
    with pytest.raises(http.DeliveryFailed) as failed:
        _poster(url=server.url)(_message())
    assert str(failed.value).startswith("ANTIDOTE_WEBHOOK_SECRET is not")
    assert "!!!" not in str(failed.value)
    assert server.received == []


def test_a_header_http_cannot_carry_is_a_permanent_failure(receiver, secret):
    server = receiver(Answer(200))
    poster = _poster(url=server.url)
    with pytest.raises(http.Unsendable, match="line break"):
        poster(_message(headers={"x-forged": "a\r\nx-admin: yes"}))
    with pytest.raises(http.Unsendable, match="not valid in HTTP"):
        poster(_message(headers={"bad name": "x"}))
    assert server.received == []


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"url": "ftp://files.example/x"}, "must start with http:// or https://"),
        ({"url": "http:///path"}, "names no host"),
        ({"url": "http://127.0.0.1:99999/"}, "is not a valid URL"),
        ({"url": "https://user:pw@hooks.example/"}, "must not hold credentials"),
        ({"url": "http://a/", "url_env": "X"}, "not both"),
        ({"url_env": ""}, "url_env must name"),
        ({"secret_env": ""}, "secret_env must name"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": True}, "timeout"),
        ({"retries": 3}, "unexpected keyword"),
    ],
)
def test_bad_options_are_refused_when_the_queue_is_saved(options, problem):
    with pytest.raises(HandlerImportError, match=problem):
        _poster(**options)


def test_one_process_reuses_its_connection(receiver, secret):
    server = receiver(Answer(200))
    poster = _poster(url=server.url)
    for _ in range(3):
        poster(_message())
    assert len({received.client for received in server.received}) == 1


def test_called_as_the_engine_calls_it_in_a_forked_batch(receiver, secret):
    server = receiver(
        Answer(200),
        Answer(429, headers={"Retry-After": "30"}),
        Answer(422, b"bad"),
        Answer(200),
    )
    poster = _poster(url=server.url)
    poster(_message(id="warm-up"))  # the parent's session must not be the child's
    messages = [_message(id=f"m-{i}") for i in range(3)]
    result = run_isolated(messages, poster)
    assert result.codes == [TRANSIENT, PERMANENT, SUCCESS]
    assert result.failures[0][1] == "DeliveryFailed"
    assert result.failures[1][:2] == (
        f"http://127.0.0.1:{server.port} answered 422 Unprocessable Entity: bad",
        "http.422",
    )
    assert result.retry_after == {0: 30.0}
    parent, *children = (received.client for received in server.received)
    assert len(set(children)) == 1 and parent not in children
