"""Refusals say what is wrong, in words, in the shape the schema documents: a 405 names the
methods the path takes, a 403 the permission missing and the roles that hold it (not its
codename), a 401 how to authenticate, a 429 when to try again, and a value too long its limit
(console.api.exception_handler, console.permissions.needs_text)."""

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

from console.permissions import INGEST_MESSAGES, VIEW_AUDIT, needs_text
from tests.browse.conftest import Index


@pytest.fixture
def api(personas):
    def client(role):
        client = APIClient()
        client.force_authenticate(personas[role])
        return client

    return client


def test_a_wrong_method_is_told_the_methods_the_path_takes(api):
    response = api("viewer").put("/api/v1/queues")

    assert response.status_code == 405
    assert response.json() == {
        "detail": "PUT is not allowed on /api/v1/queues; it takes GET, HEAD, OPTIONS"
    }
    assert response["Allow"] == "GET, HEAD, OPTIONS"


def test_a_missing_permission_is_named_in_words_with_the_roles_that_hold_it(api):
    response = api("viewer").post("/api/v1/requests", {}, format="json")

    assert response.status_code == 403
    detail = response.json()["detail"]
    assert detail == (
        "this needs permission for requesting actions (the approver or operator role)"
    )
    assert "decisions.add_actionrequest" not in detail


def test_a_person_refused_the_sending_of_messages_is_told_how_to_get_it_in_words(api):
    response = api("operator").post("/api/v1/messages", [], format="json")

    assert response.status_code == 403
    detail = response.json()["detail"]
    assert detail.startswith("a person sends messages in only into a queue an administrator")
    assert "ingest.add_messagekey" not in detail


def test_only_the_permissions_the_caller_lacks_are_named(api):
    # The audit export needs reading the trail and exporting it; an operator has neither.
    response = api("operator").get("/api/v1/audit/export")

    assert response.json()["detail"] == (
        "this needs permission for reading the audit trail and exporting the audit trail "
        "(the auditor role)"
    )


def test_a_permission_no_role_holds_says_so(personas, settings):
    from django.contrib.auth.models import Group

    Group.objects.get(name="auditor").permissions.clear()

    assert needs_text([VIEW_AUDIT]) == (
        "this needs permission for reading the audit trail (no role holds it: ask an administrator)"
    )
    assert needs_text([INGEST_MESSAGES], user=personas["operator"]) == (
        "this needs permission for sending messages (the application role)"
    )


def test_a_screen_refused_says_why_too(personas):
    client = Client()
    client.force_login(personas["viewer"])

    response = client.get("/lockouts/")

    assert response.status_code == 403
    assert b"this needs permission for managing users (the admin role)" in response.content


def test_no_credentials_say_how_to_authenticate(db):
    response = APIClient().get("/api/v1/queues")

    assert response.status_code == 401
    assert response.json()["detail"].startswith("no credentials: send Authorization: Token <key>")
    assert response["WWW-Authenticate"]


def test_too_many_calls_say_when_to_try_again(personas, settings):
    cache.clear()
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"caller": "1/min", "anonymous": "1/min"},
    }
    client = APIClient()
    client.force_authenticate(personas["viewer"])
    client.get("/api/v1/queues")

    response = client.get("/api/v1/queues")

    assert response.status_code == 429
    assert response.json()["detail"].startswith(
        "throttled: this token or user made more than 1 calls a min; try again in "
    )
    assert int(response["Retry-After"]) > 0
    cache.clear()


def test_an_id_too_long_is_told_its_limit_and_its_length(api, lake_root):
    Index().queue("orders")

    response = api("application").post(
        "/api/v1/messages", {"id": "x" * 10_000, "queue": "orders", "body": ""}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"index": 0, "id": None, "error": "id is at most 200 characters; this one has 10,000"}
    ]


def test_malformed_json_is_a_400_with_the_messages_by_field_too(api):
    Index().queue("orders")

    response = api("admin").post(
        "/api/v1/queues/orders/pause", b"\x00", content_type="application/json"
    )

    assert response.status_code == 400
    body = response.json()
    assert body["detail"].startswith("JSON parse error")
    assert body["errors"] == {"non_field_errors": [body["detail"]]}


def test_filters_that_are_not_valid_are_named_in_one_sentence_and_by_parameter(api):
    response = api("viewer").get("/api/v1/groups", {"queue": "x" * 101})

    assert response.status_code == 400
    body = response.json()
    assert list(body["errors"]) == ["queue"]
    assert body["detail"].startswith("queue: Ensure this field has no more than 100 characters")


def test_a_path_no_route_takes_is_a_json_404_under_the_api(db):
    # An id with a newline, say: no route's pattern matches it.
    response = APIClient().get("/api/v1/notes/messages/a%0Ab")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "detail": "no such path: /api/v1/notes/messages/a\nb (the API's paths are at /api/docs/)"
    }
    assert b"<html" in Client().get("/no-such-page/").content
