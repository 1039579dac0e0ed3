"""GET /api/v1/index/messages: the browser's filters and keyset pages, for programs."""

from datetime import timedelta

import pytest

from tests.browse.conftest import T0, api


@pytest.fixture
def rows(index):
    for i in range(120):
        index.row(
            f"m-{i:03d}",
            queue="orders" if i % 2 else "payments",
            last_failure_at=T0 + timedelta(minutes=i % 3),  # ties
            group_id="g1" if i < 10 else "g2",
        )


def test_it_pages_by_cursor_without_overlap(rows, personas):
    client = api(personas["viewer"])
    seen, after, pages = [], None, 0
    while True:
        params = {"page_size": 35, **({"after": after} if after else {})}
        body = client.get("/api/v1/index/messages", params).json()
        seen += [m["id"] for m in body["results"]]
        pages += 1
        after = body["next"]
        if not after:
            break

    assert pages == 4
    assert len(seen) == len(set(seen)) == 120


def test_it_filters_like_the_browser(rows, personas):
    body = (
        api(personas["viewer"])
        .get("/api/v1/index/messages", {"queue": "orders", "group": "g1"})
        .json()
    )

    assert {m["id"] for m in body["results"]} == {f"m-{i:03d}" for i in range(1, 10, 2)}
    assert body["results"][0].keys() >= {"id", "queue", "state", "reason", "group", "sender"}


def test_it_reports_the_capped_count(rows, personas):
    body = api(personas["viewer"]).get("/api/v1/index/messages", {"queue": "orders"}).json()

    assert body["count"] == {"value": 60, "more": False, "source": "index"}


@pytest.mark.parametrize(
    "params",
    [
        {"page_size": 501},
        {"page_size": 0},
        {"state": "NOPE"},
        {"sort": "message_id"},
        {"after": "forged"},
        {"since": "yesterday"},
    ],
)
def test_it_refuses_bad_parameters_with_400(rows, personas, params):
    response = api(personas["viewer"]).get("/api/v1/index/messages", params)

    assert response.status_code == 400
    assert "errors" in response.json()


def test_the_page_size_goes_up_to_500(rows, personas):
    body = api(personas["viewer"]).get("/api/v1/index/messages", {"page_size": 500}).json()

    assert len(body["results"]) == 120 and body["next"] is None


def test_a_moment_with_an_offset_postgresql_cannot_hold_is_compared_in_utc(seeded, personas):
    # 2026-03-01 12:00 UTC is 2026-03-02 04:00 at +16:00: in range for Python, not for PostgreSQL.
    client = api(personas["operator"])
    url = "/api/v1/index/messages"
    for far, utc in (
        ({"until": "2026-03-02T03:59:00+16:00"}, {"until": "2026-03-01T11:59:00Z"}),
        ({"since": "2026-03-02T04:01:00+16:00"}, {"since": "2026-03-01T12:01:00Z"}),
        ({"since": "2026-03-01T00:00:00-23:00"}, {"since": "2026-03-01T23:00:00Z"}),
    ):
        answer = client.get(url, far)
        assert answer.status_code == 200, answer.content
        assert answer.json()["results"] == client.get(url, utc).json()["results"]
