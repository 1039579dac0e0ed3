"""/api/v1/lake-queries: run a query, follow it, page its result by message id, cancel it."""

import pytest

from console.lakequery.models import LakeQuery
from tests.browse.conftest import api
from tests.lakequery.conftest import T0, done_query, result_row

ROWS = [result_row(f"m-{i}", body_size=i) for i in range(1, 8)]


@pytest.fixture
def done(db, lake_root, personas):
    # Three files, as Spark writes a sorted result in range partitions.
    return done_query(personas["operator"], ROWS, files=3, scanned=1000)


def test_posting_criteria_queues_a_query(db, personas):
    response = api(personas["operator"]).post(
        "/api/v1/lake-queries",
        {"queues": ["orders"], "body_regex": " declined$", "enqueued_from": "2026-03-01T12:00Z"},
        format="json",
    )

    assert response.status_code == 202, response.content
    body = response.json()
    query = LakeQuery.objects.get(id=body["id"])
    assert (body["status"], body["progress"], body["requester"]) == ("queued", 0, "operator")
    assert (
        body["criteria"]
        == query.criteria
        == {
            "queues": ["orders"],
            "body_regex": " declined$",  # whitespace is kept: it is searched for
            "enqueued_from": "2026-03-01T12:00:00+00:00",
        }
    )


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({}, "give at least one criterion"),
        ({"json_path": "$.a"}, "json_path and json_equals go together"),
        ({"body_regex": "("}, "body_regex is not a valid regular expression"),
        ({"states": ["GONE"]}, '"GONE" is not a valid choice.'),
        ({"everything": True}, "unknown criterion 'everything'"),
    ],
)
def test_bad_criteria_get_a_400_saying_why(db, personas, data, error):
    response = api(personas["operator"]).post("/api/v1/lake-queries", data, format="json")

    assert response.status_code == 400
    assert error in str(response.json()["errors"])
    assert not LakeQuery.objects.exists()


def test_searching_bodies_without_reading_them_is_forbidden(db, personas):
    response = api(personas["admin"]).post(
        "/api/v1/lake-queries", {"body_contains": "iban"}, format="json"
    )

    assert response.status_code == 403
    assert "permission to read bodies" in response.json()["detail"]


def test_a_query_shows_its_status_and_counts(done, personas):
    body = api(personas["viewer"]).get(f"/api/v1/lake-queries/{done.id}").json()

    assert {k: body[k] for k in ("status", "progress", "scanned", "matched", "error")} == {
        "status": "done",
        "progress": 100,
        "scanned": 1000,
        "matched": 7,
        "error": "",
    }


def test_the_result_is_paged_by_message_id_across_its_files(done, personas):
    client = api(personas["viewer"])
    url = f"/api/v1/lake-queries/{done.id}/results"

    first = client.get(url, {"limit": 4}).json()
    second = client.get(url, {"limit": 4, "after": first["next"]}).json()

    assert [r["message_id"] for r in first["results"]] == ["m-1", "m-2", "m-3", "m-4"]
    assert first["next"] == "m-4"
    assert [r["message_id"] for r in second["results"]] == ["m-5", "m-6", "m-7"]
    assert second["next"] is None
    assert first["results"][0] == {
        "message_id": "m-1",
        "queue": "orders",
        "state": "NDLV",
        "delivery_count": 1,
        "sender": "shop@example.test",
        "conversation_id": None,
        "enqueued_at": T0.isoformat().replace("+00:00", "Z"),
        "body_size": 1,
        "reason": "permanent failure",
        "updated": "2026-03-01T13:00:00Z",
    }


def test_a_page_after_the_last_id_is_empty(done, personas):
    body = api(personas["viewer"]).get(f"/api/v1/lake-queries/{done.id}/results?after=m-9").json()

    assert body == {"results": [], "next": None}


@pytest.mark.parametrize("params", ["limit=0", "limit=501", "limit=x"])
def test_a_bad_limit_gets_a_400(done, personas, params):
    response = api(personas["viewer"]).get(f"/api/v1/lake-queries/{done.id}/results?{params}")

    assert response.status_code == 400


def test_a_query_that_is_not_done_has_no_result_yet(db, personas):
    query = LakeQuery.objects.create(requester=personas["operator"], criteria={"sender": "x"})

    response = api(personas["viewer"]).get(f"/api/v1/lake-queries/{query.id}/results")

    assert response.status_code == 409
    assert response.json()["detail"] == f"lake query {query.id} is queued: it has no result yet"


@pytest.mark.parametrize("query_id", ["404", "abc", "0", "-1", str(2**64)])
@pytest.mark.parametrize("suffix", ["", "/results"])
def test_an_unknown_query_is_a_404(db, personas, query_id, suffix):
    response = api(personas["viewer"]).get(f"/api/v1/lake-queries/{query_id}{suffix}")

    assert (response.status_code, response.json()) == (404, {"detail": "no such lake query"})


def test_posting_anything_but_json_is_refused(db, personas):
    response = api(personas["operator"]).post(
        "/api/v1/lake-queries", {"sender": "x"}, format="multipart"
    )

    assert response.status_code == 415


def test_json_nested_too_deeply_is_a_400(db, personas):
    deep = "[" * 100_000 + "]" * 100_000

    response = api(personas["operator"]).post(
        "/api/v1/lake-queries", deep, content_type="application/json"
    )

    assert response.status_code == 400
    assert response.json()["detail"] == "JSON parse error - nested too deeply"


def test_cancelling_a_finished_query_is_a_conflict(done, personas):
    response = api(personas["operator"]).post(f"/api/v1/lake-queries/{done.id}/cancel")

    assert response.status_code == 409
    assert response.json()["detail"] == f"lake query {done.id} has finished already (done)"


def test_cancelling_a_queued_query_stops_it(db, personas):
    query = LakeQuery.objects.create(requester=personas["operator"], criteria={"sender": "x"})

    response = api(personas["operator"]).post(f"/api/v1/lake-queries/{query.id}/cancel")

    assert (response.status_code, response.json()["status"]) == (200, "cancelled")
    assert LakeQuery.objects.get(id=query.id).status == LakeQuery.CANCELLED
