"""/api/v1/requests: ask, read, approve, reject, withdraw, cancel, the frozen ids; every role,
and input that is not valid answered with a 4xx that says why, never a 500."""

import base64
import hashlib
import json

import pytest

from console.audit.models import AuditEntry
from console.decisions.models import ActionRequest
from console.decisions.scope import frozen_ids
from tests.browse.conftest import api
from tests.roles import ROLES, who

VIEW = {"viewer": 200, "operator": 200, "approver": 200, "admin": 200, "auditor": 200}


def _create(client, **body):
    body.setdefault("action", "fail")
    body.setdefault("scope", {"kind": "selection", "ids": ["m-01", "m-03"]})
    body.setdefault("comment", "bad data")
    return client.post("/api/v1/requests", body, format="json")


# --- Who may do what -----------------------------------------------------------------------------

# (name, method, url, the request it acts on, {role: status})
ENDPOINTS = [
    ("list", "get", lambda r: "/api/v1/requests", "pending", VIEW),
    ("detail", "get", lambda r: f"/api/v1/requests/{r.id}", "pending", VIEW),
    ("ids", "get", lambda r: f"/api/v1/requests/{r.id}/ids", "pending", VIEW),
    ("create", "post", lambda r: "/api/v1/requests", "pending", {"operator": 201, "approver": 201}),
    ("approve", "post", lambda r: f"/api/v1/requests/{r.id}/approve", "pending", {"approver": 200}),
    ("reject", "post", lambda r: f"/api/v1/requests/{r.id}/reject", "pending", {"approver": 200}),
    (
        "withdraw",
        "post",
        lambda r: f"/api/v1/requests/{r.id}/withdraw",
        "pending",
        {"operator": 200},
    ),
    (
        "cancel",
        "post",
        lambda r: f"/api/v1/requests/{r.id}/cancel",
        "approved",
        {"operator": 200, "approver": 200},
    ),
]


@pytest.mark.parametrize("role", ROLES, ids=who)
@pytest.mark.parametrize(
    ("name", "method", "url", "state", "allowed"), ENDPOINTS, ids=[e[0] for e in ENDPOINTS]
)
def test_each_endpoint_answers_each_role_as_its_permissions_say(
    requests, personas, role, name, method, url, state, allowed
):
    request = requests.approved() if state == "approved" else requests.make()
    client = api(personas[role] if role else None)
    body = {"comment": "because"}
    if name == "create":
        body = {"action": "fail", "scope": {"kind": "message", "id": "m-05"}, "comment": "x"}

    response = getattr(client, method)(
        url(request),
        body if method == "post" else None,
        format="json" if method == "post" else None,
    )

    expected = 401 if role is None else allowed.get(role, 403)
    assert response.status_code == expected, response.content[:300]
    if expected in (401, 403):
        assert "detail" in response.json()


# --- Asking -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        ({"kind": "message", "id": "m-01"}, ["m-01"]),
        ({"kind": "selection", "ids": ["m-03", "m-01", "m-11"]}, ["m-01", "m-03"]),
        ({"kind": "group", "group": "g-missing"}, ["m-00", "m-02", "m-04", "m-06", "m-08"]),
        ({"kind": "filter", "filters": {"queue": "payments"}}, ["m-08", "m-09"]),
        (
            {"kind": "filter", "filters": {"since": "2026-03-01T11:57:00Z", "queue": ""}},
            ["m-00", "m-01", "m-02", "m-03"],
        ),
    ],
    ids=["message", "selection", "group", "filter", "filter-with-time"],
)
def test_a_request_is_made_from_each_scope_kind(quarantine, personas, scope, expected):
    response = _create(api(personas["operator"]), scope=scope)

    assert response.status_code == 201, response.json()
    data = response.json()
    request = ActionRequest.objects.get()
    assert response["Location"] == f"/api/v1/requests/{request.id}"
    assert [i for ids in frozen_ids(request.ids_path) for i in ids] == expected
    assert data["id"] == request.id
    assert (data["count"], data["ids_sha256"]) == (len(expected), request.ids_sha256)
    assert data["scope"]["kind"] == scope["kind"]
    assert data["requester"] == "operator"
    assert [row["message_id"] for row in data["sample"]] == expected
    assert data["audit"][0]["action"] == "request.created"


def test_the_answer_holds_everything_the_page_shows(requests, personas):
    request = requests.make({"kind": "group", "group": "g-missing"})

    data = api(personas["viewer"]).get(f"/api/v1/requests/{request.id}").json()

    assert data["breakdown"] == {"queues": {"orders": 4, "payments": 1}, "groups": {"g-missing": 5}}
    assert data["sample"][0] == {
        "message_id": "m-00",
        "queue": "orders",
        "reason": "order 0 not found",
        "last_failure_at": "2026-03-01T12:00:00+00:00",
    }
    # Nothing done yet: every count of its progress is 0.
    counts = ("percent", "done", "skipped", "failed", "chunks_done", "chunks_total")
    assert data["progress"] == dict.fromkeys((*counts, "siblings_ended", "notifications"), 0)
    assert data["ids"] == f"/api/v1/requests/{request.id}/ids"
    assert (data["status"], data["needs_approval"], data["decided_by"]) == ("pending", True, None)
    assert (data["comment"], data["canary"], data["rate_limit"]) == ("fixed the handler", 0, None)
    assert data["edited_body_size"] is None


def test_reprocess_options_and_an_edited_body_as_text(quarantine, personas):
    response = _create(
        api(personas["operator"]),
        action="reprocess",
        scope={"kind": "message", "id": "m-01"},
        target_queue="payments",
        edited_body='{"order": "é"}',
        rate_limit=10,
        canary=1,
    )

    assert response.status_code == 201, response.json()
    request = ActionRequest.objects.get()
    assert bytes(request.edited_body) == '{"order": "é"}'.encode()
    assert (request.target_queue, request.rate_limit, request.canary) == ("payments", 10, 1)
    data = response.json()
    assert data["edited_body_size"] == len('{"order": "é"}'.encode())
    assert data["edited_body_base64"] is None  # not asked for


def test_an_edited_body_as_base64_takes_any_bytes_and_is_read_back_on_request(quarantine, personas):
    raw = b"\x00\xff binary"
    client = api(personas["operator"])
    created = _create(
        client,
        action="reprocess",
        scope={"kind": "message", "id": "m-01"},
        edited_body_base64=base64.b64encode(raw).decode(),
    ).json()
    assert created["edited_body_sha256"] == hashlib.sha256(raw).hexdigest()

    data = api(personas["approver"]).get(f"/api/v1/requests/{created['id']}?body=true").json()

    assert base64.b64decode(data["edited_body_base64"]) == raw
    entry = AuditEntry.objects.get(action="message.body_viewed")
    assert (entry.actor, entry.target_id) == ("approver", "m-01")
    # Someone who may not read bodies gets the size and hash only.
    data = api(personas["viewer"]).get(f"/api/v1/requests/{created['id']}?body=true").json()
    assert data["edited_body_base64"] is None


def test_the_list_filters_and_pages(requests, personas):
    first = requests.make()
    mine = requests.make(by="approver")
    done = requests.approved({"kind": "message", "id": "m-05"})
    client = api(personas["approver"])

    def ids(**params):
        return [r["id"] for r in client.get("/api/v1/requests", params).json()["results"]]

    assert ids() == [done.id, mine.id, first.id]
    assert ids(show="mine") == [mine.id]
    assert ids(show="waiting") == [first.id]
    assert ids(status="approved") == [done.id]
    page = client.get("/api/v1/requests", {"page_size": 2}).json()
    assert [r["id"] for r in page["results"]] == [done.id, mine.id]
    assert page["next_before"] == mine.id
    assert ids(before=page["next_before"]) == [first.id]


# --- Deciding -----------------------------------------------------------------------------------


def test_self_approval_is_a_403_in_the_api(requests, personas):
    request = requests.make(by="approver")
    client = api(personas["approver"])

    approve = client.post(f"/api/v1/requests/{request.id}/approve", {}, format="json")
    reject = client.post(f"/api/v1/requests/{request.id}/reject", {"comment": "me"}, format="json")

    assert approve.status_code == 403
    assert "four eyes" in approve.json()["detail"]
    assert reject.status_code == 403
    assert ActionRequest.objects.get(id=request.id).status == "pending"


def test_an_approver_approves_and_the_answer_shows_it(requests, personas):
    request = requests.make()

    response = api(personas["approver"]).post(
        f"/api/v1/requests/{request.id}/approve", {"comment": "ok"}, format="json"
    )

    data = response.json()
    assert (data["status"], data["decided_by"], data["decision_comment"]) == (
        "approved",
        "approver",
        "ok",
    )
    assert data["expires_at"] is not None
    assert [e["action"] for e in data["audit"]] == ["request.created", "request.approved"]
    assert data["audit"][1]["details"]["ids_sha256"] == request.ids_sha256


def test_a_rejection_without_a_reason_is_a_400_that_says_why(requests, personas):
    request = requests.make()

    response = api(personas["approver"]).post(
        f"/api/v1/requests/{request.id}/reject", {}, format="json"
    )

    assert response.status_code == 400
    assert response.json() == {"detail": "a rejection says why: the comment is required"}


def test_deciding_a_request_twice_is_a_400(requests, personas):
    request = requests.make()
    client = api(personas["approver"])
    client.post(f"/api/v1/requests/{request.id}/approve", format="json")

    response = client.post(f"/api/v1/requests/{request.id}/approve", format="json")

    assert response.status_code == 400
    assert "no longer waiting for approval" in response.json()["detail"]


def test_withdraw_and_cancel_are_recorded(requests, personas):
    pending = requests.make()
    approved = requests.approved({"kind": "message", "id": "m-05"})
    client = api(personas["operator"])

    withdrawn = client.post(
        f"/api/v1/requests/{pending.id}/withdraw", {"comment": "oops"}, format="json"
    ).json()
    cancelled = client.post(f"/api/v1/requests/{approved.id}/cancel", format="json").json()

    assert withdrawn["status"] == "withdrawn"
    assert withdrawn["audit"][-1]["action"] == "request.withdrawn"
    assert withdrawn["audit"][-1]["details"] == {"comment": "oops"}
    assert (cancelled["status"], cancelled["cancelled_by"]) == ("cancelled", "operator")
    again = client.post(f"/api/v1/requests/{approved.id}/cancel", format="json")
    assert again.status_code == 400
    assert "is not approved or running" in again.json()["detail"]


# --- The frozen ids ------------------------------------------------------------------------------


@pytest.mark.parametrize("accept", [None, "text/plain", "application/json", "image/png"])
def test_the_ids_are_text_that_hashes_to_the_approved_sha256(requests, personas, accept):
    request = requests.make({"kind": "group", "group": "g-other"})
    headers = {"HTTP_ACCEPT": accept} if accept else {}

    response = api(personas["viewer"]).get(f"/api/v1/requests/{request.id}/ids", **headers)

    body = b"".join(response.streaming_content)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert body == b"m-01\nm-03\nm-05\nm-07\nm-09\n"
    assert hashlib.sha256(body).hexdigest() == request.ids_sha256


# --- Garbage in, 4xx out ------------------------------------------------------------------------


M01 = {"kind": "message", "id": "m-01"}


def _bad(scope=M01, action="fail", comment="x", **fields):
    return {"action": action, "scope": scope, "comment": comment, **fields}


def _again(**fields):
    return _bad(action="reprocess", **fields)


@pytest.mark.parametrize(
    "body",
    [
        {},
        [],
        [{"action": "fail"}],
        "fail",
        123,
        None,
        {"action": "fail", "comment": "x"},
        _bad("everything"),
        _bad([]),
        _bad({"kind": "everything"}),
        _bad({"kind": "message"}),
        _bad({"kind": "message", "id": 5}),
        _bad({"kind": "message", "id": ["m-01"]}),
        _bad({"kind": "message", "id": "m-01", "ids": ["a"]}),
        _bad({"kind": "message", "id": "m\x0001"}),
        _bad({"kind": "message", "id": "\ud800"}),
        _bad({"kind": "message", "id": "x" * 5000}),
        _bad({"kind": "selection", "ids": []}),
        _bad({"kind": "selection", "ids": "m-01"}),
        _bad({"kind": "selection", "ids": [None]}),
        _bad({"kind": "selection", "ids": ["m"] * 10_001}),
        _bad({"kind": "group", "group": {}}),
        _bad({"kind": "group", "group": "nope"}),
        _bad({"kind": "filter", "filters": []}),
        _bad({"kind": "filter", "filters": {"evil": "1"}}),
        _bad({"kind": "filter", "filters": {"since": "no"}}),
        _bad({"kind": "filter", "filters": {"state": "ZZZ"}}),
        _bad({"kind": "filter", "filters": {"queue": None}}),
        _bad({"kind": "lake_query", "query": 10**30}),
        _bad({"kind": "lake_query", "query": "one"}),
        _bad({"kind": "lake_query", "query": 99}),
        _bad(action="explode"),
        _bad(action=None),
        _bad(comment=""),
        _bad(comment="   "),
        _bad(comment=["x"]),
        _bad(comment=True),
        _bad(comment="\x00"),
        _bad(comment="y" * 20_000),
        _again(rate_limit=10**40),
        _again(rate_limit=-1),
        _again(rate_limit=1.5),
        _again(rate_limit="fast"),
        _again(rate_limit=True),
        _again(canary=10**6),
        _again(canary=None),
        _again(target_queue="nowhere"),
        _again(edited_body="\ud800"),
        _again(edited_body_base64="***"),
        _again(edited_body_base64="é"),
        _again(edited_body="a", edited_body_base64="YQ=="),
        _again(scope={"kind": "group", "group": "g-other"}, edited_body="a"),
        _bad(edited_body="a"),
        _bad(canary=2),
        _bad(action="end_with_error"),
        _bad(action="end_with_error", error_code="c" * 101, error_description="d"),
    ],
)
def test_input_that_is_not_valid_is_a_400_that_says_why(quarantine, personas, body):
    response = api(personas["operator"]).post(
        "/api/v1/requests", json.dumps(body), content_type="application/json"
    )

    assert response.status_code == 400, response.content[:500]
    assert response.json()["detail"]
    assert not ActionRequest.objects.exists()


@pytest.mark.parametrize(
    ("payload", "content_type"),
    [
        (b"{", "application/json"),
        (b'{"action": NaN}', "application/json"),
        (b"\xff\xfe", "application/json"),
        (b"[" * 5000, "application/json"),
        (b"action=fail&comment=x", "application/x-www-form-urlencoded"),
        (b"<xml/>", "application/xml"),
    ],
)
def test_a_body_that_is_not_json_is_a_4xx(quarantine, personas, payload, content_type):
    response = api(personas["operator"]).post(
        "/api/v1/requests", payload, content_type=content_type
    )

    assert 400 <= response.status_code < 500, response.content[:300]
    assert not ActionRequest.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/requests?status=nope",
        "/api/v1/requests?show=everything",
        "/api/v1/requests?before=-1",
        "/api/v1/requests?before=99999999999999999999999",
        "/api/v1/requests?page_size=0",
        "/api/v1/requests?page_size=100000",
        "/api/v1/requests/{id}?body=maybe",
        "/api/v1/notifications?before=garbage",
        "/api/v1/notifications?page_size=-5",
        "/api/v1/notifications?sender=" + "x" * 400,
    ],
)
def test_bad_query_parameters_are_a_400(requests, personas, url):
    request = requests.make()

    response = api(personas["approver"]).get(url.format(id=request.id))

    assert response.status_code == 400, response.content[:300]
    assert response.json()["detail"]


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/api/v1/requests/999"),
        ("get", "/api/v1/requests/99999999999999999999999999"),
        ("get", "/api/v1/requests/0/ids"),
        ("post", "/api/v1/requests/999/approve"),
        ("post", "/api/v1/requests/99999999999999999999999999/cancel"),
        ("get", "/api/v1/requests/abc"),
        ("post", "/api/v1/requests/null,null/approve"),
        ("get", "/api/v1/requests/-3/ids"),
    ],
)
def test_an_unknown_request_is_a_404(requests, personas, method, url):
    response = getattr(api(personas["approver"]), method)(url)

    assert response.status_code == 404
    assert response.json()["detail"]


@pytest.mark.parametrize(
    "body",
    [
        [],
        "x",
        {"comment": ["x"]},
        {"comment": {}},
        {"comment": None},
        {"comment": "\x00"},
        {"comment": "z" * 20_000},
    ],
)
def test_a_decision_with_a_comment_that_is_not_valid_is_a_400(requests, personas, body):
    request = requests.make()

    response = api(personas["approver"]).post(
        f"/api/v1/requests/{request.id}/approve", json.dumps(body), content_type="application/json"
    )

    assert response.status_code == 400, response.content[:300]
    assert ActionRequest.objects.get(id=request.id).status == "pending"
