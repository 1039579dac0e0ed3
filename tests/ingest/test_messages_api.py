import base64

import pytest
from rest_framework.test import APIClient

from console.accounts.tokens.services import token_create
from console.ingest.models import MessageKey
from tests.ingest.conftest import lake_events, lake_messages

pytestmark = pytest.mark.django_db

URL = "/api/v1/messages"


@pytest.fixture
def client(alice):
    """Alice's producer, with the token an administrator made for her service account."""
    _, token = token_create(actor="command:test", user=alice, name="tests")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def test_it_accepts_one_message_object(client, orders):
    response = client.post(URL, {"id": "m-1", "queue": "orders", "body": "hi"}, format="json")

    assert response.status_code == 201
    assert response.json() == {"accepted": 1, "duplicates": 0, "refused": 0, "errors": []}
    assert lake_messages()["m-1"]["body"] == b"hi"


def test_it_accepts_a_list_and_a_messages_object(client, orders):
    batch = [{"id": f"m-{i}", "queue": "orders", "body": str(i)} for i in range(3)]

    listed = client.post(URL, batch, format="json")
    wrapped = client.post(URL, {"messages": batch[:2]}, format="json")

    assert listed.status_code == 201
    assert listed.json()["accepted"] == 3
    assert wrapped.status_code == 201
    assert wrapped.json() == {"accepted": 0, "duplicates": 2, "refused": 0, "errors": []}


def test_it_names_the_actor_of_the_events_after_the_user(client, orders):
    client.post(URL, {"id": "m-1", "queue": "orders", "body": "x"}, format="json")

    assert lake_events()[0]["actor"] == "api:alice"


def test_it_answers_200_with_errors_when_some_records_are_refused(client, orders):
    response = client.post(
        URL,
        [
            {"id": "ok", "queue": "orders", "body": "x"},
            {"id": "lost", "queue": "nowhere", "body": "x"},
        ],
        format="json",
    )

    assert response.status_code == 200
    assert response.json() == {
        "accepted": 1,
        "duplicates": 0,
        "refused": 1,
        "errors": [
            {
                "index": 1,
                "id": "lost",
                "error": "unknown queue 'nowhere': no queue of that name exists",
            }
        ],
    }


def test_it_answers_400_when_nothing_is_accepted(client, orders):
    client.post(URL, {"id": "m-1", "queue": "orders", "body": "one"}, format="json")

    response = client.post(URL, {"id": "m-1", "queue": "orders", "body": "two"}, format="json")

    assert response.status_code == 400
    assert response.json()["errors"][0]["error"] == (
        "message id m-1 was already accepted with a different body"
    )


def test_it_answers_400_to_malformed_json(client, orders):
    response = client.post(URL, data='{"id": "m-1",', content_type="application/json")

    assert response.status_code == 400
    assert response.json()["detail"].startswith("malformed JSON: ")
    assert not MessageKey.objects.exists()


@pytest.mark.parametrize("payload", ["[]", '"text"', '{"messages": 3}', ""])
def test_it_answers_400_to_a_request_without_messages(client, orders, payload):
    response = client.post(URL, data=payload, content_type="application/json")

    assert response.status_code == 400
    assert "message object" in response.json()["detail"]


def test_it_answers_415_to_a_form_post(client, orders):
    response = client.post(URL, {"id": "m-1", "queue": "orders", "body": "x"})

    assert response.status_code == 415


def test_it_refuses_a_request_larger_than_one_message_can_be(client, orders, settings):
    settings.MAX_BODY_BYTES = 10
    big = "x" * (2 * 1024 * 1024)

    response = client.post(URL, {"id": "m-1", "queue": "orders", "body": big}, format="json")

    assert response.status_code == 413
    assert not MessageKey.objects.exists()


def test_it_takes_a_body_larger_than_djangos_form_limit(client, orders, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    data = bytes(range(256)) * 40

    response = client.post(
        URL,
        {
            "id": "m-1",
            "queue": "orders",
            "body": base64.b64encode(data).decode(),
            "body_encoding": "base64",
        },
        format="json",
    )

    assert response.status_code == 201
    assert lake_messages()["m-1"]["body"] == data


def test_it_refuses_an_anonymous_caller(orders):
    response = APIClient().post(URL, {"id": "m-1", "queue": "orders", "body": "x"}, format="json")

    assert response.status_code in (401, 403)
    assert not MessageKey.objects.exists()


def test_it_refuses_a_user_without_the_permission(charlie, orders):
    client = APIClient()
    client.force_login(charlie)

    response = client.post(URL, {"id": "m-1", "queue": "orders", "body": "x"}, format="json")

    assert response.status_code == 403
    assert not MessageKey.objects.exists()


def test_it_accepts_a_service_accounts_token_and_no_session_of_its_own_is_needed(alice, orders):
    _, token = token_create(actor="command:test", user=alice, name="tests")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")

    response = client.post(URL, {"id": "m-1", "queue": "orders", "body": "x"}, format="json")

    assert response.status_code == 201


def test_it_refuses_a_wrong_token(orders):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")

    response = client.post(URL, {"id": "m-1", "queue": "orders", "body": "x"}, format="json")

    # 403, not 401: SessionAuthentication comes first in settings and names no challenge.
    assert response.status_code in (401, 403)
    assert "Invalid token" in response.json()["detail"]
    assert not MessageKey.objects.exists()
