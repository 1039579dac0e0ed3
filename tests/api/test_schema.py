"""/api/schema/: the API's OpenAPI 3 document, for signed-in users and clients with a token."""

import re

import pytest
from django.test import Client
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

from tests.api.conftest import openapi_document
from tests.browse.conftest import Index

URL = "/api/schema/"


def _document(client):
    response = client.get(URL, {"format": "json"})
    assert response.status_code == 200, response.content[:300]
    return response.json()


def test_it_serves_a_valid_openapi_3_document(token_headers):
    document = _document(APIClient(headers=token_headers))

    validate_schema(document)  # raises on anything OpenAPI 3.0 does not allow
    assert document["openapi"].startswith("3.")
    assert document["info"]["title"] == "Antidote API"


def test_it_is_the_document_the_api_tests_run_against(token_headers):
    assert _document(APIClient(headers=token_headers)) == openapi_document()


def test_it_serves_yaml_unless_asked_for_json(token_headers):
    response = APIClient(headers=token_headers).get(URL)

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi")
    assert response.content.startswith(b"openapi: 3.")


def test_a_signed_in_user_of_the_console_may_read_it(everyone):
    client = Client()
    client.force_login(everyone)

    assert client.get(URL).status_code == 200


def test_it_refuses_an_anonymous_caller(db):
    response = APIClient().get(URL)

    assert response.status_code == 401


@pytest.mark.django_db
def test_every_operation_refuses_an_anonymous_caller_as_it_says():
    client = APIClient()
    answered, undocumented = {}, []

    for path, operations in openapi_document()["paths"].items():
        url = re.sub(r"\{[^}]+\}", "1", path)
        for method, operation in operations.items():
            answered[method, path] = getattr(client, method)(url).status_code
            if "401" not in operation["responses"]:
                undocumented.append((method, path))

    assert set(answered.values()) == {401}, answered
    assert undocumented == []


def test_it_names_the_message_body_as_bytes():
    body = openapi_document()["paths"]["/api/v1/messages/{message_id}/body"]["get"]

    content = body["responses"]["200"]["content"]
    assert list(content) == ["application/octet-stream"]
    assert content["application/octet-stream"]["schema"] == {"type": "string", "format": "binary"}


@pytest.mark.django_db
def test_the_body_is_served_to_a_client_that_asks_for_the_media_type_the_schema_names(
    lake_root, personas
):
    Index().message("order-1", "raw bytes")
    client = APIClient()
    client.force_authenticate(personas["operator"])

    response = client.get("/api/v1/messages/order-1/body", HTTP_ACCEPT="application/octet-stream")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/octet-stream"
    assert response.content == b"raw bytes"
