import base64

import pytest

from tests.brokers.http.receiver import Receiver
from tests.delivery.conftest import delivery_path, engine  # noqa: F401 - fixtures used here too

# A Standard Webhooks secret: whsec_ and 24 random bytes in base64 (made for these tests).
SECRET = "whsec_" + base64.b64encode(b"antidote-tests-secret-24").decode()


@pytest.fixture
def secret(monkeypatch):
    monkeypatch.setenv("ANTIDOTE_WEBHOOK_SECRET", SECRET)
    return SECRET


@pytest.fixture
def receiver(outbound_allow):
    """receiver(script) starts a receiver answering `script`, which the outbound guard lets
    through (it alone: its address and port); all are stopped after the test."""
    started = []

    def start(*script):
        server = Receiver(script)
        started.append(server)
        outbound_allow(f"127.0.0.1:{server.port}")
        return server

    yield start
    for server in started:
        server.close()
