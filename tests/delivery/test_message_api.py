"""GET /api/v1/messages/{id}: a message's state and whole history, for those allowed to see it."""

import pytest
from rest_framework.test import APIClient

from console.lake.models import LakeCommit

pytestmark = [pytest.mark.spark]


@pytest.fixture
def delivered(engine, personas):
    engine.queue()
    engine.ingest(
        "orders",
        {"order-1": "transient"},
        conversation_id="c-1",
        sender="shop@example.test",
        headers={"trace": "abc"},
    )
    engine.deliver()
    return "order-1"


def _client(user=None):
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def test_it_shows_state_count_next_attempt_reason_and_history(delivered, personas):
    response = _client(personas["viewer"]).get(f"/api/v1/messages/{delivered}")
    assert response.status_code == 200
    body = response.json()
    assert body["state"] == "WAIT"
    assert body["delivery_count"] == 1
    assert body["blacklist_candidate"] is False
    assert body["next_attempt_at"].startswith("2026-03-01T12:01:00")
    assert body["reason"] == "inventory service unavailable"
    assert body["headers"] == {"trace": "abc"}
    assert (body["conversation_id"], body["sender"]) == ("c-1", "shop@example.test")
    assert [(e["from_state"], e["to_state"]) for e in body["history"]] == [
        (None, "TBDL"),
        ("TBDL", "DLNG"),
        ("DLNG", "WAIT"),
    ]
    assert "Traceback" in body["history"][-1]["stack"]


def test_reading_a_message_changes_nothing(delivered, personas):
    commits = list(LakeCommit.objects.values_list("id", "path", "row_count"))
    first = _client(personas["operator"]).get(f"/api/v1/messages/{delivered}").json()
    again = _client(personas["operator"]).get(f"/api/v1/messages/{delivered}").json()
    assert first == again
    assert list(LakeCommit.objects.values_list("id", "path", "row_count")) == commits


def test_it_answers_404_for_an_unknown_message(delivered, personas):
    assert _client(personas["viewer"]).get("/api/v1/messages/nope").status_code == 404


@pytest.mark.parametrize(("who", "status"), [(None, 401), ("outsider", 403), ("auditor", 403)])
def test_it_refuses_those_without_the_right_to_view_messages(delivered, personas, who, status):
    client = _client(personas[who] if who else None)
    assert client.get(f"/api/v1/messages/{delivered}").status_code == status


def test_it_answers_a_person_signed_in_with_their_session(delivered, personas):
    # A person has no API token (R19): their session is how they call the API.
    client = APIClient()
    assert client.login(username="viewer", password="pw-viewer-1234")
    assert client.get(f"/api/v1/messages/{delivered}").status_code == 200
