"""Input that no stored object can match gets a clear 4xx, never a server error: on SQLite and on
PostgreSQL alike, which refuses a query holding a NUL character."""

import pytest
from rest_framework.test import APIClient


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
