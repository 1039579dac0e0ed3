"""Real receivers for the alerts: an SMTP server (aiosmtpd) and an HTTP server for webhooks, each
in a thread of the test process on a port of its own, that a test can take down and bring back."""

import hashlib
import hmac
import json
import socket
import threading
import time
from email import message_from_bytes, policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller

# Quarantined messages in the index, for requests on them.
from tests.decisions.conftest import quarantine  # noqa: F401 - a fixture

# Workers as real processes, to kill.
from tests.processes.conftest import processes  # noqa: F401 - a fixture

SECRET = "test-webhook-secret"
SECRET_ENV = "ANTIDOTE_ALERT_TEST_WEBHOOK_SECRET"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Mailbox:
    """An SMTP server whose received mail a test reads; stop() and start() take it down and back
    on the same port."""

    def __init__(self):
        self.port = free_port()
        self.mails = []
        self.controller = None

    async def handle_DATA(self, server, session, envelope):
        self.mails.append(
            (envelope.rcpt_tos, message_from_bytes(envelope.content, policy=policy.default))
        )
        return "250 OK"

    def start(self):
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def stop(self):
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    def to(self, address):
        return [mail for rcpt, mail in self.mails if address in rcpt]


@pytest.fixture
def mailbox(settings):
    box = Mailbox()
    box.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = box.port
    settings.EMAIL_TIMEOUT = 5
    yield box
    box.stop()


class Receiver:
    """A webhook receiver. `answer` is the HTTP status it gives; `hang` makes it hold the next
    request without answering until `release` is set. It keeps every request it got whole, and
    checks each one's signature as a receiver would, independently of the sender's code."""

    def __init__(self):
        self.answer = 200
        self.body = b""  # what it answers with (Slack says "ok"; its refusals say why)
        self.answer_headers = {}
        self.hang = False
        self.release = threading.Event()
        self.got = []  # (headers, payload, signature_ok, status answered or None)
        self.port = free_port()
        self.server = None
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                row = [
                    dict(self.headers),
                    json.loads(body),
                    receiver.signed(self.headers, body),
                    None,
                ]
                receiver.got.append(row)
                if receiver.hang:
                    receiver.hang = False
                    receiver.release.wait(120)
                    return
                # Noted before answering: the sender may read the answer and go on (and the
                # test look) before this thread runs another line.
                row[3] = receiver.answer
                self.send_response(receiver.answer)
                for name, value in receiver.answer_headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(receiver.body)))
                self.end_headers()
                self.wfile.write(receiver.body)

            def log_message(self, *args):
                pass

        self.handler = Handler

    @staticmethod
    def signed(headers, body):
        if "X-Antidote-Signature" not in headers:
            return False  # a format other than ours (Slack, Teams, PagerDuty) is not signed
        parts = dict(p.split("=", 1) for p in headers["X-Antidote-Signature"].split(","))
        expected = hmac.new(SECRET.encode(), parts["t"].encode() + b"." + body, hashlib.sha256)
        fresh = abs(time.time() - int(parts["t"])) < 300
        return fresh and hmac.compare_digest(expected.hexdigest(), parts["v1"])

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self):
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), self.handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        if self.server is not None:
            self.release.set()
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def accepted(self):
        """The payloads it answered with a 2xx."""
        return [payload for _, payload, _, status in self.got if status and status < 300]


@pytest.fixture
def receiver(monkeypatch, outbound_allow):
    monkeypatch.setenv(SECRET_ENV, SECRET)
    hook = Receiver()
    outbound_allow(f"127.0.0.1:{hook.port}")  # it alone, through the outbound guard
    hook.start()
    yield hook
    hook.stop()


@pytest.fixture
def webhook(receiver, personas):
    from console.alerts.services import webhook_create

    return webhook_create(
        actor=personas["admin"],
        name="ops",
        url=receiver.url,
        kinds=[],
        queues=[],
        secret_env=SECRET_ENV,
    )


@pytest.fixture
def emails(personas):
    """Every persona with an email address."""
    for name, user in personas.items():
        user.email = f"{name}@example.test"
        user.save(update_fields=["email"])
    return {name: f"{name}@example.test" for name in personas}


def queue_disabled_alert(**kwargs):
    """Raise the alert "Queue orders was disabled" (to whom `kwargs` say, `to=[]`: to nobody
    but the webhooks); the one alert the tests of the outbox and of what it sends raise."""
    from console.alerts import events as E
    from console.alerts.services import alert_raise

    return alert_raise(
        kind=E.QUEUE_DISABLED,
        about="orders",
        title="Queue orders was disabled",
        text="The queue orders was disabled: 5 failed attempts in a row",
        link="/queues/",
        queue="orders",
        **kwargs,
    )
