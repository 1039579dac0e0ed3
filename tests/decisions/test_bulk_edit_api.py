"""A bulk edit through the API (issue 46, point 3): `POST /api/v1/requests/patch-preview` shows a
JSON Patch on the first messages of a scope before any request exists; `POST /api/v1/requests`
takes the patch, freezes its preview with the request, and the request shows both, the bodies'
diffs only to a caller who may read bodies and asks for them (each read recorded). Every role,
and input that is not valid answered in words."""

import pytest

from console.audit.models import AuditEntry
from console.decisions.models import ActionRequest
from tests.api_roles import assert_api_answers
from tests.browse.conftest import api
from tests.decisions.conftest import CURRENCY_GROUP as GROUP
from tests.roles import ROLES, who

JSON = "application/json"
ADD_CURRENCY = [{"op": "add", "path": "/currency", "value": "EUR"}]
PREVIEW = "/api/v1/requests/patch-preview"


def _preview(client, patch=ADD_CURRENCY, scope=None):
    body = {"scope": scope or {"kind": "group", "group": GROUP}, "patch": patch}
    return client.post(PREVIEW, body, format="json")


def _create(client, **extra):
    body = {
        "action": "reprocess",
        "scope": {"kind": "group", "group": GROUP},
        "patch": ADD_CURRENCY,
        "comment": "they are all euros",
        **extra,
    }
    return client.post("/api/v1/requests", body, format="json")


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_who_may_preview_a_bulk_edit_is_who_may_ask_for_one(bulk_orders, personas, role):
    response = _preview(api(personas[role] if role else None))

    assert_api_answers(response, role, allowed=("operator", "approver"))


def test_the_preview_shows_the_first_messages_each_with_its_diff_or_why_not(bulk_orders, personas):
    response = _preview(api(personas["operator"]))

    assert response.status_code == 200
    data = response.json()
    assert [(row["message_id"], row["applies"]) for row in data["rows"]] == [
        ("o-1", True),
        ("o-2", True),
        ("o-3", True),
        ("o-4", True),
        ("o-5", False),
    ]
    assert (data["failing"], data["refused"]) == (1, "")
    first, fax = data["rows"][0], data["rows"][4]
    assert (first["size_before"], first["size_after"]) == (12, 28)
    assert ["added", '  "currency": "EUR"'] in first["diff"]["lines"]
    assert fax["reason"] == "the body is not JSON: Expecting value at line 1, column 1"
    assert fax["diff"] is None
    reads = AuditEntry.objects.filter(
        action="message.body_viewed", details__via="bulk edit preview"
    )
    assert sorted(reads.values_list("target_id", flat=True)) == ["o-1", "o-2", "o-3", "o-4"]
    assert not ActionRequest.objects.exists()


@pytest.mark.parametrize(
    ("patch", "said"),
    [
        ({"op": "add", "path": "/currency"}, "A JSON Patch is a list of operations"),
        ('[{"op": "add", "path": "/currency", "value": "EUR"}]', "not text"),
        ([{"op": "add", "path": "currency", "value": "EUR"}], "is not a JSON Pointer"),
        ([{"op": "replace", "path": "/currency"}], "Operation 1 (replace /currency) needs a value"),
    ],
    ids=["object", "text", "pointer", "no-value"],
)
def test_a_patch_that_is_not_one_is_refused_in_words(bulk_orders, personas, patch, said):
    for response in (
        _preview(api(personas["operator"]), patch),
        _create(api(personas["operator"]), patch=patch),
    ):
        assert response.status_code == 400
        assert said in " ".join(response.json()["errors"]["patch"])
    assert not ActionRequest.objects.exists()


def test_a_request_takes_the_patch_and_shows_it_with_its_frozen_preview(bulk_orders, personas):
    response = _create(api(personas["operator"]))

    assert response.status_code == 201, response.json()
    data = response.json()
    assert (data["status"], data["count"], data["patch"]) == ("pending", 5, ADD_CURRENCY)
    assert data["approval_reason"] == (
        "It edits the messages' bodies (a JSON Patch): a second person must approve it."
    )
    assert len(data["patch_sha256"]) == 64
    assert [row["applies"] for row in data["patch_preview"]] == [True] * 4 + [False]
    assert all(row["diff"] is None for row in data["patch_preview"])  # not asked for
    request = ActionRequest.objects.get()

    # The bodies' diffs, asked for by who may read bodies, and each read recorded.
    url = f"/api/v1/requests/{request.id}?body=true"
    shown = api(personas["approver"]).get(url).json()["patch_preview"]
    assert ["added", '  "currency": "EUR"'] in shown[0]["diff"]["lines"]
    reads = AuditEntry.objects.filter(
        action="message.body_viewed", actor="approver", details__request=request.id
    )
    assert sorted(reads.values_list("target_id", flat=True)) == ["o-1", "o-2", "o-3", "o-4"]
    hidden = api(personas["viewer"]).get(url).json()["patch_preview"]
    assert all(row["diff"] is None for row in hidden)
    assert not AuditEntry.objects.filter(action="message.body_viewed", actor="viewer").exists()


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({"action": "fail"}, "only reprocess takes a JSON Patch"),
        (
            {"scope": {"kind": "message", "id": "o-1"}, "edited_body": '{"order": 1}'},
            "give an edited body and headers, or a JSON Patch, not both",
        ),
        ({"scope": {"kind": "lake_query", "query": 1}}, "a bulk edit acts on a selection"),
    ],
    ids=["fail", "with-an-edited-body", "lake-query"],
)
def test_a_patch_where_it_does_not_apply_is_refused(bulk_orders, personas, extra, said):
    response = _create(api(personas["operator"]), **extra)

    assert response.status_code == 400
    assert said in response.json()["detail"]
    assert not ActionRequest.objects.exists()
