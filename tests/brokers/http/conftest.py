import base64

import pytest

from tests.delivery.conftest import delivery_path, engine  # noqa: F401 - fixtures used here too

# A Standard Webhooks secret: whsec_ and 24 random bytes in base64 (made for these tests).
SECRET = "whsec_" + base64.b64encode(b"antidote-tests-secret-24").decode()


@pytest.fixture
def secret(monkeypatch):
    monkeypatch.setenv("ANTIDOTE_WEBHOOK_SECRET", SECRET)
    return SECRET
