"""Attack: whoever reads the logs (an operator, a log pipeline, a support ticket's paste) posts to
Slack or Teams as Antidote, or reads a broker's password. A Slack or Teams webhook's URL carries
its key in the path, others a token in the query, a broker's URL its password; the worker logged
full webhook URLs. Rule (R19): a URL is logged, kept in a reason and shown as scheme://host:port
and a marker (workers.redaction), never its path, query or user and password, even when the
receiver quotes them back.

Each sink and each alert kind is sent to a real server on 127.0.0.1 that refuses (an HTTP server
answering 500, or 422 quoting the request; a Redis and a NATS server that quote back what they
were sent; RabbitMQ refusing a wrong password), with every log record captured at DEBUG, the
libraries' own included."""

import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.urls import reverse

from console.alerts.models import AlertDelivery, Webhook
from console.alerts.sending import alerts_send
from console.alerts.services import delivery_retry, webhook_create
from console.audit.models import AuditEntry
from console.ingest.consumers import source_consume
from console.queues.models import BrokerSource
from console.queues.services import queues_load
from tests.alerts.conftest import Mailbox, queue_disabled_alert
from tests.browse.conftest import api, login
from tests.conftest import require_service
from workers.engine.handlers import Deferred, Message, handler_build
from workers.redaction import MARKER, UNREADABLE, scrubbed, url_redacted, url_secrets

PATH_SECRET = "T0PATHSECRET/B0PATHSECRET/xoxbPATHSECRET"
QUERY_SECRET = "sigQUERYSECRET"
PASSWORD = "pwPASSWORDSECRET"
SECRETS = (PATH_SECRET, "PATHSECRET", QUERY_SECRET, PASSWORD)
SIGNING = "whsec_YW50aWRvdGUtdGVzdHMtc2VjcmV0LTI0"  # a Standard Webhooks secret for the sink


def _leaks(*texts):
    return [s for s in SECRETS for text in texts if s in text]


class Quoting:
    """An HTTP server on 127.0.0.1 that refuses every POST with `status`, quoting the request's
    path and query back in its answer, as a careless receiver would."""

    def __init__(self, status=500):
        self.status = status
        self.paths = []
        quoting = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                quoting.paths.append(self.path)
                # The quote straddles the 200 characters a reason keeps.
                answer = f"{'.' * 170} no hook at {self.path}".encode()
                self.send_response(quoting.status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def url(self, userinfo=""):
        return f"http://{userinfo}127.0.0.1:{self.port}/services/{PATH_SECRET}?sig={QUERY_SECRET}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def quoting(outbound_allow):
    made = []

    def make(status=500):
        server = Quoting(status)
        outbound_allow(f"127.0.0.1:{server.port}")
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


@pytest.fixture
def logs(caplog):
    """Every record at DEBUG, urllib3's, pika's and the brokers' own included."""
    caplog.set_level(logging.DEBUG)
    for name in ("urllib3", "pika", "amqp", "nats", "redis"):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


# --- The helper -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "https://hooks.slack.com/services/T0000/B0000/XXXXXXXX",
            f"https://hooks.slack.com:443/{MARKER}",
        ),
        (
            "https://prod-00.westeurope.logic.azure.com:443/workflows/abc/triggers/manual/paths/"
            "invoke?api-version=2016-06-01&sig=SECRET",
            f"https://prod-00.westeurope.logic.azure.com:443/{MARKER}",
        ),
        ("http://user:pass@127.0.0.1:8231/x?token=t", f"http://127.0.0.1:8231/{MARKER}"),
        ("https://[::1]:8443/hook", f"https://[::1]:8443/{MARKER}"),
        ("https://events.pagerduty.com", f"https://events.pagerduty.com:443/{MARKER}"),
        ("amqp://guest:guest@rabbit/%2F", f"amqp://rabbit:5672/{MARKER}"),
        # urllib3 (which sends) takes a backslash for the path's start: so is the host shown.
        ("http://127.0.0.1\\.example.com:8231/x", f"http://127.0.0.1:80/{MARKER}"),
        ("https://user@secret@host/", f"https://host:443/{MARKER}"),
        ("not a url with SECRET", UNREADABLE),
    ],
)
def test_a_url_is_shown_as_its_origin_and_a_marker_only(url, shown):
    assert url_redacted(url) == shown


def test_a_text_quoting_a_url_or_its_parts_is_scrubbed():
    url = f"https://bot:{PASSWORD}@hooks.example.com/services/{PATH_SECRET}?sig={QUERY_SECRET}"
    said = f"invalid URL {url!r}; path /services/{PATH_SECRET}; password {PASSWORD}"

    assert _leaks(scrubbed(said, url_secrets(url))) == []


# --- Every alert kind -----------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", [f for f, _ in Webhook.FORMATS])
@pytest.mark.parametrize("status", [500, 404])
def test_no_alert_kind_logs_or_shows_its_webhooks_key(
    personas, monkeypatch, quoting, logs, fmt, status
):
    monkeypatch.setenv("ANTIDOTE_ALERT_HOOK_SECRET", "whsec-like-signing-secret-of-the-hook")
    receiver = quoting(status)
    hook = webhook_create(
        actor=personas["admin"],
        name=fmt,
        format=fmt,
        url=receiver.url(),
        kinds=[],
        queues=[],
        secret_env="ANTIDOTE_ALERT_HOOK_SECRET" if fmt in Webhook.WITH_SECRET else "",
    )
    queue_disabled_alert(to=[])

    assert alerts_send() == (0, 1)

    assert receiver.paths == [f"/services/{PATH_SECRET}?sig={QUERY_SECRET}"]  # it did go there
    delivery = AlertDelivery.objects.get(webhook=hook)
    shown = f"http://127.0.0.1:{receiver.port}/{MARKER}"
    said = [r.getMessage() for r in logs.records]
    assert any(shown in line and f"HTTP {status}" in line for line in said), said
    # urllib3's line of the request, which named its path: there, redacted.
    assert any(f'"POST /{MARKER} HTTP/1.1" {status}' in line for line in said), said
    assert _leaks(logs.text, delivery.last_error) == []
    delivery_retry(actor=personas["admin"], delivery=delivery)
    outbox = login(personas["admin"]).get(reverse("alert-outbox")).content.decode()
    outbox_api = api(personas["admin"]).get(reverse("api-alert-outbox")).json()
    trail = [e.details for e in AuditEntry.objects.filter(action__startswith="alerts.")]
    assert outbox_api["results"][0]["address"] == shown
    assert f'<td><span class="cut" title="{shown}">{shown}</span></td>' in outbox
    assert _leaks(str(trail), str(outbox_api)) == []


@pytest.mark.django_db
def test_the_email_kind_logs_no_password_of_its_mail_server(personas, settings, logs):
    box = Mailbox()  # an SMTP server that knows no AUTH: the login is refused
    box.start()
    try:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", box.port, 5
        settings.EMAIL_HOST_USER, settings.EMAIL_HOST_PASSWORD = "antidote", PASSWORD
        admin = personas["admin"]
        admin.email = "admin@example.com"
        admin.save()

        queue_disabled_alert(to=[admin])

        assert alerts_send() == (0, 1)
    finally:
        box.stop()
    delivery = AlertDelivery.objects.get(channel=AlertDelivery.EMAIL)
    assert "SMTP AUTH extension not supported" in delivery.last_error
    assert any("admin@example.com" in r.getMessage() for r in logs.records)
    assert _leaks(logs.text, delivery.last_error) == []


# --- Every sink ---------------------------------------------------------------------------------


def _outcome(handler, message):
    """Call a handler as the engine does (in this process, so that its logs are captured) and
    settle it: the exception it failed with."""
    try:
        result = handler(message)
    except Exception as exc:
        return exc
    if isinstance(result, Deferred):
        result.settle()
        return result.error
    return None


def _message():
    return Message(id="refund-1", queue="refunds", body=b'{"refund": 1}', content_type="text/plain")


@pytest.mark.parametrize("status", [500, 422])
def test_the_http_sink_logs_no_path_query_or_password(monkeypatch, quoting, logs, status):
    receiver = quoting(status)
    monkeypatch.setenv("ANTIDOTE_WEBHOOK_SECRET", SIGNING)
    monkeypatch.setenv("ANTIDOTE_TEST_HOOK_URL", receiver.url(f"hook:{PASSWORD}@"))
    for options in ({"url": receiver.url()}, {"url_env": "ANTIDOTE_TEST_HOOK_URL"}):
        failure = _outcome(handler_build("workers.brokers.http.poster", options), _message())

        assert f"127.0.0.1:{receiver.port} answered {status}" in str(failure)
        assert _leaks(str(failure), logs.text) == [], options
    said = [r.getMessage() for r in logs.records]
    assert any(f'"POST /{MARKER} HTTP/1.1" {status}' in line for line in said), said
    assert len(receiver.paths) == 2


class Quoter:
    """A broker on 127.0.0.1 that refuses the login by quoting back what the client sent (a
    NATS server's -ERR, a Redis error reply): a client that shows a server's words as they are
    would write the password into the reason."""

    def __init__(self, kind):
        self.kind = kind
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            conn.settimeout(5)
            try:
                if self.kind == "nats":
                    conn.sendall(b'INFO {"server_id":"q","version":"2.10.0","headers":true,')
                    conn.sendall(b'"max_payload":1048576,"proto":1,"auth_required":true}\r\n')
                said = conn.recv(4096).decode("latin-1").replace("\r", " ").replace("\n", " ")
                error = f"-ERR 'you sent {said}'\r\n" if self.kind == "nats" else f"-ERR {said}\r\n"
                conn.sendall(error.encode("latin-1"))
                conn.recv(4096)
            except OSError:
                pass

    def close(self):
        self.sock.close()


@pytest.mark.parametrize(
    ("kind", "path", "url"),
    [
        ("nats", "workers.brokers.nats.publisher", "nats://antidote:{pw}@127.0.0.1:{port}"),
        (
            "redis",
            "workers.brokers.redis_streams.publisher",
            "redis://antidote:{pw}@127.0.0.1:{port}/0",
        ),
    ],
)
def test_a_broker_sink_logs_no_password_even_quoted_back(monkeypatch, logs, kind, path, url):
    server = Quoter(kind)
    try:
        monkeypatch.setenv("ANTIDOTE_TEST_BROKER_URL", url.format(pw=PASSWORD, port=server.port))
        options = {"url_env": "ANTIDOTE_TEST_BROKER_URL"}
        if kind == "nats":
            options["subject"] = "refunds.created"
        else:
            options["stream"] = "refunds"

        failure = _outcome(handler_build(path, options), _message())
    finally:
        server.close()

    assert failure is not None
    assert f"127.0.0.1:{server.port}" in str(failure)
    assert _leaks(str(failure), logs.text) == []


def test_the_rabbitmq_sink_logs_no_password_rabbitmq_refused(monkeypatch, logs):
    require_service("RabbitMQ", port=5672)
    monkeypatch.setenv("ANTIDOTE_TEST_BROKER_URL", f"amqp://guest:{PASSWORD}@127.0.0.1:5672/%2F")
    handler = handler_build(
        "workers.brokers.redrive.publisher",
        {"url_env": "ANTIDOTE_TEST_BROKER_URL", "routing_key": "refunds"},
    )

    failure = _outcome(handler, _message())

    assert "cannot connect to RabbitMQ at 127.0.0.1:5672" in str(failure)
    assert _leaks(str(failure), logs.text) == []


@pytest.mark.parametrize("kind", ["nats", "redis"])
def test_a_broker_source_logs_and_records_no_password_even_quoted_back(
    transactional_db, monkeypatch, logs, kind
):
    server = Quoter(kind)
    scheme = "nats" if kind == "nats" else "redis"
    monkeypatch.setenv(
        "ANTIDOTE_TEST_BROKER_URL", f"{scheme}://antidote:{PASSWORD}@127.0.0.1:{server.port}"
    )
    queues_load(
        data={
            "queues": [{"name": "refunds-dead", "handler": "workers.brokers.intake.dead_letter"}],
            "sources": [
                {
                    "name": "refunds-dlq",
                    "kind": kind,
                    "url_env": "ANTIDOTE_TEST_BROKER_URL",
                    "broker_queue": "REFUNDS" if kind == "nats" else "refunds",
                    "queue": "refunds-dead",
                    "options": {} if kind == "nats" else {"group": "billing"},
                }
            ],
        }
    )
    source = BrokerSource.objects.select_related("queue").get()
    stop, said = threading.Event(), []

    def say(line):
        said.append(line)
        if ": down" in line:
            stop.set()  # one failed connection is enough

    try:
        source_consume(source, stop=stop, say=say)
    finally:
        server.close()

    # The reason it is down, as the Sources page and the log show it.
    (down,) = [line for line in said if ": down" in line]
    assert f"127.0.0.1:{server.port}" in down
    assert _leaks(logs.text, *said) == []
