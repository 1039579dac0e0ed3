"""Input that no stored object can match gets a clear 4xx, never a server error: on SQLite and on
PostgreSQL alike, which refuses a query holding a NUL character."""

import pytest
from rest_framework.response import Response
from rest_framework.test import APIClient, APIRequestFactory, force_authenticate
from rest_framework.views import APIView

# Deeper than Python's JSON parser goes.
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def client(everyone):
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(everyone)
    return client


@pytest.mark.parametrize(
    ("method", "url", "detail"),
    [
        ("get", "/api/v1/messages/order%001", "no such message"),
        ("get", "/api/v1/messages/order%001/body", "no such message"),
        ("get", "/api/v1/groups/%00", "no such failure group"),
        ("post", "/api/v1/queues/orders%00/enable", "no such queue"),
    ],
)
def test_an_id_with_a_nul_character_is_not_found(client, method, url, detail):
    response = getattr(client, method)(url)

    assert response.status_code == 404
    assert response.json() == {"detail": detail}


def test_a_queue_filter_with_a_nul_character_is_refused(client):
    response = client.get("/api/v1/groups", {"queue": "orders\x00"})

    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["queue"]


def test_an_unknown_queue_is_not_found(client):
    response = client.post("/api/v1/queues/nosuch/enable")

    assert response.status_code == 404
    assert response.json() == {"detail": "no such queue"}


@pytest.mark.parametrize("url", ["/api/v1/messages", "/api/v1/requests", "/api/v1/lake-queries"])
def test_json_nested_too_deeply_is_a_400_not_a_server_error(client, url, service_account):
    if url == "/api/v1/messages":
        client.force_authenticate(service_account)  # who sends into every queue (R19)
    response = client.post(url, DEEP, content_type="application/json")

    assert response.status_code == 400
    assert "nested too deeply" in response.json()["detail"]


class _Echo(APIView):
    """An endpoint with DRF's defaults: the parser it gets is every endpoint's."""

    def post(self, request):
        return Response(request.data)


def test_an_endpoint_that_names_no_parser_answers_json_nested_too_deeply_with_a_400(everyone):
    request = APIRequestFactory().post("/", DEEP, content_type="application/json")
    force_authenticate(request, user=everyone)

    response = _Echo.as_view()(request)

    assert response.status_code == 400
    assert response.data == {
        "detail": "JSON parse error - nested too deeply",
        "errors": {"non_field_errors": ["JSON parse error - nested too deeply"]},
    }
    # Forms still parse as DRF's defaults do.
    form = APIRequestFactory().post("/", {"a": "1"})
    force_authenticate(form, user=everyone)
    assert _Echo.as_view()(form).data.dict() == {"a": "1"}
