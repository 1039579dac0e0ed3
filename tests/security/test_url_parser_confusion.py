"""Issue 43, point 4, as an attacker tries it: walk around the redrive host allow-list
(REDRIVE_URL_HOSTS) or the internal-address refusal with a URL that one parser reads one way and
the client that sends reads another (`http://127.0.0.1\\.example.com:8231`: urlsplit's host is
`127.0.0.1\\.example.com`, urllib3's is `127.0.0.1`). Outbound URLs are read once, as urllib3
reads them (workers.outbound.urls), and every known confusion form is refused with a reason: when
a request, a webhook or a queue names it, and again when the HTTP sink or the alert sender would
send. The attacker's server on 127.0.0.1 receives nothing."""

import json
from urllib.parse import urlsplit

import pytest
import requests
from django.urls import reverse
from urllib3.util import parse_url

from console.decisions.models import ActionRequest
from console.queues.services import QueueLoadError, queues_load
from tests.brokers.http.receiver import Answer, Receiver
from tests.browse.conftest import api
from workers.brokers import http
from workers.engine.handlers import Message, handler_build
from workers.outbound import (
    DestinationError,
    OutboundRefused,
    allowance_parse,
    destination_check,
    guarded_session,
)

POSTER = "workers.brokers.http.poster"
NOTHING_ALLOWED = allowance_parse("")

# (form, what the refusal says), each aimed at the attacker's port {P} on 127.0.0.1.
CONFUSIONS = [
    ("http://127.0.0.1\\.example.com:{P}/", "backslash"),
    ("http://orders.example.com\\@127.0.0.1:{P}/", "backslash"),
    ("http:\\\\127.0.0.1:{P}/", "backslash"),
    ("http://orders.example.com@127.0.0.1:{P}/", "must not hold credentials"),
    ("http://orders.example.com:x@127.0.0.1:{P}/", "must not hold credentials"),
    ("http://a@orders.example.com@127.0.0.1:{P}/", "must not hold credentials"),
    ("http://127.0.0.1:{P}#@orders.example.com/", "fragment"),
    ("http://127.0.0.1:{P}/#orders.example.com", "fragment"),
    ("http://[::1]:{P}/", "a loopback address"),
    ("http://[::ffff:127.0.0.1]:{P}/", "an IPv6 form of 127.0.0.1"),
    ("http://[::ffff:7f00:1]:{P}/", "an IPv6 form of 127.0.0.1"),
    ("http://[0:0:0:0:0:ffff:127.0.0.1]:{P}/", "an IPv6 form of 127.0.0.1"),
    ("http://[::127.0.0.1]:{P}/", "a reserved IPv6 address"),
    ("http://[::1%25lo]:{P}/", "zone"),
    ("http://[::1]orders.example.com:{P}/", "not a valid URL"),
    ("http://2130706433:{P}/", "four decimal numbers"),
    ("http://0177.0.0.1:{P}/", "four decimal numbers"),
    ("http://0x7f.0.0.1:{P}/", "four decimal numbers"),
    ("http://0x7f000001:{P}/", "four decimal numbers"),
    ("http://127.1:{P}/", "four decimal numbers"),
    ("http://127.000.000.001:{P}/", "four decimal numbers"),
    ("http://127.0.0.1.:{P}/", "ends with a dot"),
    ("http://localhost.:{P}/", "ends with a dot"),
    ("http://orders.example.com..:{P}/", "ends with a dot"),
    ("http://127.0.0.1:{P}/", "a loopback address"),
    ("HTTP://127.0.0.1:{P}/", "a loopback address"),
    ("http://0.0.0.0:{P}/", "'this network' address"),
    ("http://localhost:{P}/", "localhost resolves to"),
    ("http://%31%32%37.0.0.1:{P}/", "percent-encoded"),
    ("http://127.0.0.1%2f.example.com:{P}/", "percent-encoded"),
    ("http://１２７.０.０.１:{P}/", "beyond ASCII"),  # noqa: RUF001 - the fullwidth digits are the attack
    ("http://ⓛocalhost:{P}/", "beyond ASCII"),
    # The ASCII form of a look-alike name: a name like any other, resolved and checked.
    ("http://xn--lcalhost-4c0d:{P}/", None),
    ("http://127.0.0.1 .example.com:{P}/", "space or a control character"),
    ("http://127.0.0.1\t.example.com:{P}/", "space or a control character"),
    (" http://127.0.0.1:{P}/", "space or a control character"),
    ("http://127.0.0.1\x00.example.com:{P}/", "space or a control character"),
    ("http://127.0.0.1:{P}/\r\nHost: orders.example.com", "space or a control character"),
    ("http://127.0.0.1:{P}:80/", "not a valid URL"),
    ("http://127.0.0.1:+{P}/", "not a valid URL"),
    ("http:/127.0.0.1:{P}/", "must start with http:// or https://"),
    ("http:127.0.0.1:{P}/", "must start with http:// or https://"),
    ("//127.0.0.1:{P}/", "must start with http:// or https://"),
    ("gopher://127.0.0.1:{P}/", "must start with http:// or https://"),
    ("file:///etc/passwd", "must start with http:// or https://"),
]


def _aimed(form, port):
    return form.replace("{P}", str(port))


@pytest.fixture
def attacker():
    """The attacker's endpoint: a real server on 127.0.0.1 that no allowance names."""
    server = Receiver([Answer(200, b"internal answer")])
    yield server
    server.close()


def test_the_reported_form_is_read_as_two_hosts_by_two_parsers():
    # Why the refusal exists: the same text, two hosts.
    url = "http://127.0.0.1\\.example.com:8231/"
    assert urlsplit(url).hostname == "127.0.0.1\\.example.com"
    assert parse_url(url).host == "127.0.0.1"


@pytest.mark.parametrize(("form", "said"), CONFUSIONS)
def test_a_confusing_url_is_refused_when_configured_saying_why(form, said):
    url = _aimed(form, 8231)
    if said is None:
        # A real name: its answer, checked, decides (here it does not resolve).
        assert destination_check(url, allowance=NOTHING_ALLOWED, resolve=True)
        return
    with pytest.raises((DestinationError, OutboundRefused)) as refused:
        destination_check(url, allowance=NOTHING_ALLOWED, resolve=True)
    assert said in str(refused.value)


@pytest.mark.parametrize(("form", "said"), CONFUSIONS)
def test_a_confusing_url_sends_nothing_when_the_sink_or_the_guard_is_handed_it(
    form, said, attacker, monkeypatch, connections
):
    url = _aimed(form, attacker.port)
    monkeypatch.setenv("ANTIDOTE_WEBHOOK_SECRET", "whsec_" + "QUJD" * 8)
    # The queue's URL is another (never reached); the request's own target is the attack.
    poster = handler_build(POSTER, {"url": "https://orders.example.test/hooks"})
    message = Message(
        id="m-1",
        queue="orders.http",
        body=b"{}",
        content_type="application/json",
        headers={},
        redrive_target=json.dumps({"url": url}),
    )
    with pytest.raises((http.NoDeliveryUrl, http.DestinationRefused, http.DeliveryFailed)):
        poster(message)

    # Straight to the guarded session, past any check of the caller's.
    with pytest.raises((DestinationError, OutboundRefused, requests.RequestException, ValueError)):
        guarded_session(allowance=NOTHING_ALLOWED).post(url, data=b"x", timeout=2)

    assert attacker.received == []
    assert ("127.0.0.1", attacker.port) not in connections.connects


def test_the_reported_bypass_of_redrive_url_hosts_is_a_400(quarantine, personas, settings):
    settings.REDRIVE_URL_HOSTS = ["*.example.com"]

    response = api(personas["operator"]).post(
        "/api/v1/requests",
        {
            "action": "reprocess",
            "scope": {"kind": "message", "id": "m-01"},
            "comment": "to the partner",
            "redrive_target": {"url": "http://127.0.0.1\\.example.com:8231/"},
        },
        format="json",
    )

    assert response.status_code == 400, response.json()
    said = str(response.json()["errors"]["redrive_target"])
    assert "holds a backslash" in said
    assert not ActionRequest.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1\\.example.com:8231/",
        "http://hooks.example.com@127.0.0.1:8231/",
        "http://2130706433:8231/",
        "http://[::ffff:127.0.0.1]:8231/",
    ],
)
def test_a_webhook_or_a_queue_file_naming_a_confusing_url_is_refused(personas, db, url):
    created = api(personas["admin"]).post(
        reverse("api-alert-webhooks"),
        {"name": "chat", "format": "slack", "url": url},
        format="json",
    )
    assert created.status_code == 400, created.json()

    with pytest.raises(QueueLoadError, match=r"cannot be used: .* url "):
        queues_load(
            data={"queues": [{"name": "hooks", "handler": POSTER, "handler_options": {"url": url}}]}
        )


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.slack.com/services/T000/B000/XXXX",
        "https://events.pagerduty.com/v2/enqueue",
        "http://orders.example.com:8080/hooks/dead-letters?tenant=acme&from=a@b",
        "https://[2606:4700:4700::1111]/hooks",
        "https://93.184.215.14:8443/x",
        "https://xn--bcher-kva.example/in",
        "https://ORDERS.Example.com/x/%5C/y",
    ],
)
def test_plain_urls_are_taken_as_they_are(url):
    destination = destination_check(url, allowance=NOTHING_ALLOWED)
    assert destination.host == parse_url(url).host.strip("[]")
