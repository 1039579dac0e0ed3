"""Issue 43, point 5, as an attacker tries it: make the product send to an internal address (its
own loopback services, the cloud metadata service, the private network) through a redrive
request's own URL, a webhook or alert target, or a queue's `url`, and read the answer back in a
reason. Every outbound request goes through the guard (workers.outbound): internal addresses are
refused unless OUTBOUND_ALLOW_INTERNAL names them (for demos and tests only), every address a
name resolves to is checked, and the connection goes to the address checked.

The attacker's endpoint is a real server on 127.0.0.1 that the allowance does not name: it must
receive nothing. Link-local, private and public addresses are never connected to: they are given
to the guard as IP literals or through its resolver seam, and the test watches every connect
(tests.outbound.ConnectionsWatched), stopping any beyond 127.0.0.1."""

import base64
import ipaddress
import json
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.urls import reverse

from console.alerts.models import AlertDelivery, Webhook
from console.alerts.sending import alerts_send
from console.alerts.services import webhook_create
from console.decisions.models import ActionRequest
from console.queues.models import Queue
from console.queues.services import QueueLoadError, queues_load
from tests.alerts.conftest import queue_disabled_alert
from tests.brokers.http.receiver import Answer, Receiver
from tests.browse.conftest import api
from tests.certificates import self_signed
from workers.brokers import http
from workers.engine.handlers import HandlerImportError, Message, handler_build
from workers.outbound import (
    OutboundRefused,
    address_refusal,
    allowance_parse,
    guarded_session,
)
from workers.outbound.addresses import addresses_resolved

POSTER = "workers.brokers.http.poster"
SECRET = "whsec_" + base64.b64encode(b"antidote-security-test-key").decode()
NOTHING_ALLOWED = allowance_parse("")
INTERNAL = "the product does not send to internal addresses"


@pytest.fixture
def attacker():
    """The attacker's endpoint: a real server on 127.0.0.1, not allowed."""
    server = Receiver([Answer(200, b"ami-id\nsecret-access-key: AKIA...")])
    yield server
    server.close()


@pytest.fixture
def allowed(receiver):
    """A receiver the allowance names: the one place these tests may send to."""
    return receiver(Answer(200, b"ok"))


@pytest.fixture
def signing(monkeypatch):
    monkeypatch.setenv("ANTIDOTE_WEBHOOK_SECRET", SECRET)


def _message(**fields):
    return Message(
        id="m-1",
        queue="orders.http",
        body=b'{"order": 42}',
        content_type="application/json",
        headers={},
        **fields,
    )


def _resolver(*answers, calls=None):
    """A resolver seam that answers each lookup with the next list of addresses (the last list
    once they run out), as socket.getaddrinfo would."""
    answers = list(answers)

    def resolve(host, port, family=0, type=0, *rest):
        if calls is not None:
            calls.append(host)
        addresses = answers[0] if len(answers) == 1 else answers.pop(0)
        return [
            (
                socket.AF_INET6 if ":" in a else socket.AF_INET,
                socket.SOCK_STREAM,
                6,
                "",
                (a, port, 0, 0) if ":" in a else (a, port),
            )
            for a in addresses
        ]

    return resolve


# --- Each way in, against the attacker's endpoint on 127.0.0.1 --------------------------------


def test_an_operator_cannot_name_a_loopback_redrive_url_and_is_told_why(
    quarantine, personas, attacker
):
    response = api(personas["operator"]).post(
        "/api/v1/requests",
        {
            "action": "reprocess",
            "scope": {"kind": "message", "id": "m-01"},
            "comment": "to the new consumer",
            "redrive_target": {"url": attacker.url},
        },
        format="json",
    )

    assert response.status_code == 400, response.json()
    said = str(response.json()["errors"]["redrive_target"])
    assert f"127.0.0.1, a loopback address: {INTERNAL}" in said
    assert "OUTBOUND_ALLOW_INTERNAL" in said
    assert not ActionRequest.objects.exists()
    assert attacker.received == []


def test_a_redrive_url_that_reaches_the_sink_anyway_is_refused_when_sending(
    signing, allowed, attacker, connections
):
    # Written before the guard, or a name whose record changed since: the sink checks again.
    poster = handler_build(POSTER, {"url": allowed.url})
    message = _message(redrive_target=json.dumps({"url": attacker.url}))

    with pytest.raises(http.DestinationRefused) as refused:
        poster(message)

    assert str(refused.value) == (
        f"not sent to http://127.0.0.1:{attacker.port}: 127.0.0.1, a loopback address: "
        f"{INTERNAL} (OUTBOUND_ALLOW_INTERNAL lets one through, for demos and tests only)"
    )
    assert attacker.received == [] and allowed.received == []
    assert ("127.0.0.1", attacker.port) not in connections.connects


def test_a_queue_file_cannot_point_a_poster_at_loopback(db, attacker):
    with pytest.raises(QueueLoadError) as refused:
        queues_load(
            data={
                "queues": [
                    {"name": "hooks", "handler": POSTER, "handler_options": {"url": attacker.url}}
                ]
            }
        )

    assert f"url 127.0.0.1, a loopback address: {INTERNAL}" in str(refused.value)
    assert not Queue.objects.filter(name="hooks").exists()


def test_a_queue_file_cannot_point_a_poster_at_a_name_that_resolves_to_loopback(db):
    # "localhost" resolves through the system's resolver, to loopback only.
    with pytest.raises(QueueLoadError) as refused:
        queues_load(
            data={
                "queues": [
                    {
                        "name": "hooks",
                        "handler": POSTER,
                        "handler_options": {"url": "http://localhost:8000/admin/"},
                    }
                ]
            }
        )

    assert "url localhost resolves to " in str(refused.value)
    assert "a loopback address" in str(refused.value)


def test_a_url_from_the_environment_pointing_at_loopback_sends_nothing(
    signing, monkeypatch, attacker
):
    monkeypatch.setenv("ORDERS_HOOK_URL", attacker.url)
    poster = handler_build(POSTER, {"url_env": "ORDERS_HOOK_URL"})

    with pytest.raises(http.DestinationRefused, match=r"127\.0\.0\.1, a loopback address"):
        poster(_message())

    assert attacker.received == []


def test_an_administrator_cannot_add_or_move_a_webhook_to_loopback(personas, attacker):
    client = api(personas["admin"])
    created = client.post(
        reverse("api-alert-webhooks"),
        {"name": "ops", "format": "slack", "url": attacker.url},
        format="json",
    )

    assert created.status_code == 400, created.json()
    assert f"127.0.0.1, a loopback address: {INTERNAL}" in str(created.json())
    assert not Webhook.objects.exists()

    hook = webhook_create(
        actor=personas["admin"],
        name="ops",
        format="slack",
        url="https://hooks.slack.example/services/T/B/X",
        kinds=[],
        queues=[],
        secret_env="",
    )
    moved = client.patch(
        reverse("api-alert-webhook", args=[hook.id]), {"url": attacker.url}, format="json"
    )

    assert moved.status_code == 400, moved.json()
    assert "a loopback address" in str(moved.json())
    hook.refresh_from_db()
    assert hook.url == "https://hooks.slack.example/services/T/B/X"


@pytest.mark.parametrize("fmt", [Webhook.GENERIC, Webhook.SLACK, Webhook.PAGERDUTY])
@pytest.mark.django_db
def test_an_alert_target_stored_with_a_loopback_url_fails_at_once_and_sends_nothing(
    personas, monkeypatch, attacker, fmt
):
    # A row from before the guard (the service writes what it is given; the form and the API
    # check): the sender refuses it, once, with its reason, and never copies an answer.
    monkeypatch.setenv("ANTIDOTE_ALERT_TEST_KEY", "k" * 32)
    webhook_create(
        actor=personas["admin"],
        name="ops",
        format=fmt,
        url=attacker.url,
        kinds=[],
        queues=[],
        secret_env="" if fmt == Webhook.SLACK else "ANTIDOTE_ALERT_TEST_KEY",
    )
    queue_disabled_alert(to=[])

    assert alerts_send() == (0, 1)

    delivery = AlertDelivery.objects.get(channel="webhook")
    assert delivery.state == AlertDelivery.FAILED  # permanent: no retry mends it
    assert delivery.last_error.startswith(f"not sent: 127.0.0.1, a loopback address: {INTERNAL}")
    assert "ami-id" not in delivery.last_error
    assert attacker.received == []


def test_the_allowance_lets_through_one_address_and_port_not_the_host(signing, allowed, attacker):
    # 127.0.0.1:<receiver's port> is allowed; the attacker on another port of the same host
    # is not.
    with pytest.raises(HandlerImportError, match="a loopback address"):
        handler_build(POSTER, {"url": attacker.url})

    handler_build(POSTER, {"url": allowed.url})(_message())

    assert len(allowed.received) == 1 and attacker.received == []


# --- Internal addresses refused at the guard, before any connection ---------------------------

INTERNAL_ADDRESSES = [
    ("169.254.169.254", "a link-local address (cloud metadata services live there)"),
    ("10.0.0.7", "a private address (RFC 1918)"),
    ("172.16.5.4", "a private address (RFC 1918)"),
    ("192.168.1.10", "a private address (RFC 1918)"),
    ("100.64.0.1", "a shared address (carrier-grade NAT, RFC 6598)"),
    ("0.0.0.0", "a 'this network' address (0.0.0.0 reaches this host)"),  # noqa: S104
    ("127.0.0.53", "a loopback address"),
    ("224.0.0.251", "a multicast address"),
    ("240.0.0.1", "a reserved address"),
    ("255.255.255.255", "a reserved address"),
    ("198.18.0.1", "a benchmarking address"),
    ("::1", "a loopback address"),
    ("::", "the unspecified address"),
    ("fe80::1", "a link-local address"),
    ("fd00:ec2::254", "a unique local address (IPv6's private range)"),
    ("ff02::1", "a multicast address"),
    ("::ffff:169.254.169.254", "an IPv6 form of 169.254.169.254, a link-local address"),
    ("64:ff9b::a9fe:a9fe", "an IPv6 form of 169.254.169.254, a link-local address"),
    ("2002:a9fe:a9fe::1", "an IPv6 form of 169.254.169.254, a link-local address"),
    ("::7f00:1", "a reserved IPv6 address"),
    ("2001:db8::1", "a documentation address"),
]


@pytest.mark.parametrize(("address", "kind"), INTERNAL_ADDRESSES)
def test_an_internal_address_is_refused_before_any_connection(address, kind, connections):
    shown = str(ipaddress.ip_address(address))
    literal = f"[{shown}]" if ":" in shown else shown
    session = guarded_session(allowance=NOTHING_ALLOWED)

    with pytest.raises(OutboundRefused) as refused:
        session.post(f"http://{literal}:8080/latest/meta-data/", data=b"x", timeout=1)
    assert kind in str(refused.value)

    # The same address behind a name: resolved by the guard's seam, refused the same way.
    named = guarded_session(allowance=NOTHING_ALLOWED, resolver=_resolver([address]))
    with pytest.raises(OutboundRefused) as refused:
        named.post("https://metadata.internal.test/latest", data=b"x", timeout=1)
    assert str(refused.value).startswith(f"metadata.internal.test resolves to {literal}, {kind}")

    assert connections.connects == [] and connections.lookups == []


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:4700:4700::1111", "8.8.8.8"])
def test_a_public_address_passes_the_guard_which_hands_back_that_address_to_connect_to(address):
    # Checked at the guard only: a test never connects to a public address.
    assert address_refusal(ipaddress.ip_address(address)) is None
    vetted = addresses_resolved(
        "partner.example.test", 443, allowance=NOTHING_ALLOWED, resolver=_resolver([address])
    )
    assert [sockaddr[0] for _family, sockaddr in vetted] == [address]


def test_a_name_that_resolves_to_a_public_and_an_internal_address_is_refused(connections):
    session = guarded_session(
        allowance=NOTHING_ALLOWED, resolver=_resolver(["93.184.215.14", "10.0.0.5"])
    )

    with pytest.raises(OutboundRefused, match=r"partner\.test resolves to 10\.0\.0\.5, a private"):
        session.post("https://partner.test/hooks", data=b"x", timeout=1)
    assert connections.connects == []


def test_a_name_that_resolves_to_the_allowed_receiver_and_metadata_is_refused(allowed, connections):
    # The allowed address first: still refused, since the connect might have used the other.
    session = guarded_session(
        allowance=allowance_parse(f"127.0.0.1:{allowed.port}"),
        resolver=_resolver(["127.0.0.1", "169.254.169.254"]),
    )

    with pytest.raises(OutboundRefused, match=r"resolves to 169\.254\.169\.254, a link-local"):
        session.post(f"http://partner.test:{allowed.port}/hooks", data=b"x", timeout=2)
    assert allowed.received == [] and connections.connects == []


def test_a_rebinding_record_cannot_move_the_connection_after_the_check(allowed, connections):
    # The record answers the allowed receiver once, then the metadata service: the check and
    # the connect use the one lookup, and the name is never resolved again for that connection.
    calls = []
    session = guarded_session(
        allowance=allowance_parse(f"127.0.0.1:{allowed.port}"),
        resolver=_resolver(["127.0.0.1"], ["169.254.169.254"], calls=calls),
    )

    answered = session.post(f"http://rebind.test:{allowed.port}/hooks", data=b"x", timeout=2)

    assert answered.status_code == 200
    assert calls == ["rebind.test"]  # one lookup, by the guard
    assert connections.lookups == []  # and none by urllib3 behind its back
    assert connections.connects == [("127.0.0.1", allowed.port)]
    # The Host header is the name's, as without the guard.
    assert allowed.received[0].header("Host") == f"rebind.test:{allowed.port}"

    # A new connection looks the name up again, and the new answer is refused.
    fresh = guarded_session(
        allowance=allowance_parse(f"127.0.0.1:{allowed.port}"),
        resolver=_resolver(["169.254.169.254"], calls=calls),
    )
    with pytest.raises(OutboundRefused, match=r"rebind\.test resolves to 169\.254\.169\.254"):
        fresh.post(f"http://rebind.test:{allowed.port}/hooks", data=b"x", timeout=2)
    assert len(allowed.received) == 1
    assert connections.connects == [("127.0.0.1", allowed.port)]


def test_tls_goes_to_the_checked_address_but_verifies_and_names_the_host(tmp_path, connections):
    cert, key = self_signed(tmp_path, "receiver.test")
    names = []
    server = _tls_server(cert, key, names)
    port = server.server_address[1]
    try:
        session = guarded_session(
            allowance=allowance_parse(f"127.0.0.1:{port}"),
            resolver=_resolver(["127.0.0.1"]),
        )
        answered = session.post(
            f"https://receiver.test:{port}/hooks", data=b"x", timeout=5, verify=str(cert)
        )
    finally:
        server.shutdown()
        server.server_close()

    # The certificate names receiver.test only (no IP): it verified against the name, and the
    # server saw the name in SNI.
    assert answered.status_code == 200
    assert names == ["receiver.test"]
    assert connections.connects == [("127.0.0.1", port)]


# --- What comes back -----------------------------------------------------------------------------

HOSTILE_ANSWER = (
    b"\x1b[31mFORGED\x1b[0m\r\n2026-01-01 INFO granted admin\n\xe2\x80\xaeexe.txt " + b"AKIA" * 400
)


def test_of_a_refusing_answer_the_sink_keeps_a_short_inert_excerpt(signing, outbound_allow):
    server = Receiver([Answer(422, HOSTILE_ANSWER)])
    outbound_allow(f"127.0.0.1:{server.port}")
    try:
        with pytest.raises(http.DeliveryRefused) as refused:
            handler_build(POSTER, {"url": server.url})(_message())
    finally:
        server.close()

    reason = str(refused.value)
    assert "answered 422 Unprocessable Entity: [31mFORGED [0m" in reason
    assert len(reason) < 300
    assert reason.isprintable()
    assert "\u202e" not in reason


def _alerted_receiver(personas, outbound_allow, answer):
    """A receiver the guard lets through, which answers `answer`, behind a Slack webhook with a
    queue-disabled alert due to it."""
    server = Receiver([answer])
    outbound_allow(f"127.0.0.1:{server.port}")
    webhook_create(
        actor=personas["admin"],
        name="chat",
        format="slack",
        url=server.url,
        kinds=[],
        queues=[],
        secret_env="",
    )
    queue_disabled_alert(to=[])
    return server


def test_of_a_refusing_answer_an_alert_keeps_a_short_inert_excerpt(personas, outbound_allow):
    server = _alerted_receiver(personas, outbound_allow, Answer(400, HOSTILE_ANSWER))
    try:
        alerts_send()
    finally:
        server.close()

    last_error = AlertDelivery.objects.get(channel="webhook").last_error
    # The escape, the line breaks and the right-to-left override are spaces: inert text.
    assert last_error.startswith("the receiver answered HTTP 400 Bad Request: [31mFORGED [0m ")
    assert len(last_error) < 300
    assert last_error.isprintable()


def test_an_alert_receiver_that_redirects_to_the_attacker_sends_it_nothing(
    personas, outbound_allow, attacker
):
    server = _alerted_receiver(
        personas, outbound_allow, Answer(307, headers={"Location": attacker.url})
    )
    try:
        assert alerts_send() == (0, 1)
    finally:
        server.close()

    assert len(server.received) == 1 and attacker.received == []
    assert AlertDelivery.objects.get(channel="webhook").last_error.startswith(
        "the receiver answered HTTP 307"
    )


# --- A TLS receiver for one name -------------------------------------------------------------


def _tls_server(cert, key, names):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: names.append(name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return server
