"""/api/v1/messages, where a REST client looks for messages: GET lists them (the quarantine
browser's filters and pages), POST sends them in, each method with its own permission; a
producer's service account (the application role) sends, and a person only into a queue they may
send into by hand (R19). The list's old path,
/api/v1/index/messages, still answers, and says where it moved."""

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from console.accounts.tokens.services import token_create
from tests.browse.conftest import Index
from tests.ingest.conftest import lake_messages

URL = "/api/v1/messages"
OLD = "/api/v1/index/messages"


@pytest.fixture
def world(personas, lake_root):
    index = Index()
    index.queue("orders")
    index.row("order-1", reason="inventory service unavailable")
    index.row("order-2", state="WAIT", reason="timeout")
    index.row("shipment-1", queue="shipping", reason="carrier down")
    return personas


def _token_client(user):
    """A service account's client, with its token."""
    _, token = token_create(actor="command:test", user=user, name="tests")
    return APIClient(headers={"Authorization": f"Token {token}"})


def _signed_in(user):
    """A person's client: signed in, with their session (a person has no token)."""
    client = APIClient()
    client.force_login(user)
    return client


def _ids(response):
    return [row["id"] for row in response.json()["results"]]


def test_the_application_role_sends_a_message_with_its_token(world):
    application = _token_client(world["application"])

    response = application.post(
        URL, {"id": "order-9", "queue": "orders", "body": '{"order": 9}'}, format="json"
    )

    assert response.status_code == 201, response.json()
    assert response.json() == {"accepted": 1, "duplicates": 0, "refused": 0, "errors": []}
    assert lake_messages()["order-9"]["body"] == b'{"order": 9}'


def test_the_application_role_still_sees_no_message(world):
    application = _token_client(world["application"])

    response = application.get(URL)

    assert response.status_code == 403
    assert response.json()["detail"].startswith("this needs permission for seeing messages (")


def test_get_lists_what_the_index_lists_with_its_filters_and_pages(world):
    viewer = _signed_in(world["viewer"])

    everything = viewer.get(URL)
    orders = viewer.get(URL, {"queue": "orders", "state": "NDLV"})
    first = viewer.get(URL, {"page_size": 2, "sort": "queue"})
    second = viewer.get(URL, {"page_size": 2, "sort": "queue", "after": first.json()["next"]})

    assert everything.status_code == 200
    assert sorted(_ids(everything)) == ["order-1", "order-2", "shipment-1"]
    assert everything.json()["count"] == {"value": 3, "more": False, "source": "index"}
    assert _ids(orders) == ["order-1"]
    assert sorted(_ids(first) + _ids(second)) == ["order-1", "order-2", "shipment-1"]
    assert len(_ids(first)) == 2
    assert "Deprecation" not in everything


def test_get_refuses_filters_that_are_not_valid_saying_which(world):
    response = _signed_in(world["viewer"]).get(URL, {"page_size": 0})

    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["page_size"]
    assert response.json()["detail"].startswith("page_size: ")


def test_a_viewer_may_list_but_not_send(world):
    viewer = _signed_in(world["viewer"])

    response = viewer.post(URL, {"id": "x", "queue": "orders", "body": ""}, format="json")

    assert viewer.get(URL).status_code == 200
    assert response.status_code == 403
    assert response.json()["detail"].startswith(
        "a person sends messages in only into a queue an administrator let them send into by hand"
    )


def test_an_operator_lists_and_sends_only_into_a_queue_they_may_send_into_by_hand(world):
    from console.access.models import IngestRight
    from console.queues.models import Queue

    operator = _signed_in(world["operator"])
    message = {"id": "order-8", "queue": "orders", "body": "8"}

    refused = operator.post(URL, message, format="json")
    IngestRight.objects.create(
        user=world["operator"], queue=Queue.objects.get(name="orders"), since=timezone.now()
    )
    sent = operator.post(URL, message, format="json")

    assert refused.status_code == 403
    assert sent.status_code == 201
    assert operator.get(URL).status_code == 200


@pytest.mark.parametrize("role", ["approver", "admin", "auditor", "outsider"])
def test_roles_without_the_permission_may_not_send(world, role):
    response = _signed_in(world[role]).post(
        URL, {"id": "x", "queue": "orders", "body": ""}, format="json"
    )

    assert response.status_code == 403


def test_the_old_path_answers_as_the_new_one_and_says_where_it_moved(world):
    viewer = _signed_in(world["viewer"])

    old = viewer.get(OLD, {"queue": "orders"})
    new = viewer.get(URL, {"queue": "orders"})

    assert old.status_code == 200
    assert old.json() == new.json()
    assert old["Link"] == '</api/v1/messages>; rel="successor-version"'
    # RFC 9745: the date it moved, as a structured-field date.
    assert old["Deprecation"] == "@1795737600"


def test_the_old_path_says_where_it_moved_on_a_refusal_too(world):
    response = _token_client(world["application"]).get(OLD)

    assert response.status_code == 403
    assert response["Link"] == '</api/v1/messages>; rel="successor-version"'


def test_the_schema_has_one_path_for_listing_and_sending_and_marks_the_old_one(world):
    from tests.api.conftest import openapi_document

    paths = openapi_document()["paths"]

    assert set(paths[URL]) == {"get", "post"}
    assert paths[URL]["get"]["operationId"] == "messages_list"
    assert paths[URL]["post"]["operationId"] == "messages_ingest"
    old = paths[OLD]["get"]
    assert old["deprecated"] is True
    assert "moved to `GET /api/v1/messages`" in old["description"]
    assert {"Deprecation", "Link"} <= set(old["responses"]["200"]["headers"])
