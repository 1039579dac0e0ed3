"""A bulk edit (issue 46, point 3), end to end on the real Spark session: orders a handler refuses
without `currency` are quarantined; an operator writes a JSON Patch on their failure group's
request form, sees its preview on the first ten with each body's diff, and sends it; the patch
and the preview are frozen into the request; a second person approves it; the decisions job
carries it out chunk by chunk, each edited body a new version of its message (R13) reprocessed
as usual, and delivered; a member's lineage shows the diff. A patched body that does not parse
as its message's JSON is refused before any request exists; a member the patch does not apply
to is counted failed with why and stays quarantined, nothing lost."""

import json
from urllib.parse import urlencode

import pytest
from django.urls import reverse

from console.audit.models import AuditEntry
from console.browse.selectors import message_body
from console.decisions.models import ActionChunk, ActionRequest
from console.decisions.outcome import SKIPPED, request_outcome
from console.lake.models import LakeCommit
from console.readmodels.models import FailureGroup, MessageIndex
from tests.browse.conftest import api, login
from tests.decisions.desk import make_desk

pytestmark = [pytest.mark.spark, pytest.mark.slow]

JSON = "application/json"
ADD_CURRENCY = [{"op": "add", "path": "/currency", "value": "EUR"}]
N = 1000


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


def _orders(desk, bodies, **fields):
    """Orders that `booked` refuses for want of a currency, quarantined at the first failure,
    and their failure group."""
    desk.queue("orders", handler="tests.handlers_for_tests.booked", max_failed_deliveries=1)
    ids = desk.quarantine("orders", bodies, **fields)
    (group,) = FailureGroup.objects.filter(queue="orders")
    return ids, group


def _form(group):
    return reverse("request-new") + "?" + urlencode({"scope": "group", "group": group.fingerprint})


def _posted(patch, **fields):
    return {
        "action": "reprocess",
        "patch": json.dumps(patch),
        "comment": "the shop forgot the currency: they are all euros",
        **fields,
    }


def test_a_bulk_edit_of_1000_messages_is_previewed_approved_carried_out_and_delivered(
    desk, personas
):
    bodies = [json.dumps({"order": n, "amount": 10 + n % 7}) for n in range(N)]
    ids, group = _orders(desk, bodies, content_type=JSON)
    assert MessageIndex.objects.filter(state="NDLV").count() == N
    operator = login(personas["operator"])

    # The preview: the patch on the first ten by id, each body's diff; no request yet.
    previewed = operator.post(_form(group), _posted(ADD_CURRENCY, rate_limit=400, preview="1"))
    assert previewed.status_code == 200
    assert not ActionRequest.objects.exists()
    rows = previewed.context["preview"]
    assert [row["message_id"] for row in rows] == ids[:10]
    assert all(row["applies"] for row in rows)
    changed = [line for line in rows[0]["diff"]["lines"] if line[0] in ("added", "removed")]
    assert changed == [
        ["removed", '  "amount": 10'],
        ["added", '  "amount": 10,'],
        ["added", '  "currency": "EUR"'],
    ]
    html = previewed.content.decode()
    assert '<span class="diff-added">+   &quot;currency&quot;: &quot;EUR&quot;</span>' in html
    assert 'id="patch-previewed"' in html
    reads = AuditEntry.objects.filter(
        action="message.body_viewed", details__via="bulk edit preview"
    )
    assert sorted(reads.values_list("target_id", flat=True)) == ids[:10]

    # Sent as previewed: frozen with its patch and its preview, waiting for a second person.
    fingerprint = previewed.context["form"].data["previewed"]
    sent = operator.post(_form(group), _posted(ADD_CURRENCY, rate_limit=400, previewed=fingerprint))
    assert sent.status_code == 302
    request = ActionRequest.objects.get()
    assert (request.status, request.count) == ("pending", N)
    assert json.loads(request.patch) == ADD_CURRENCY
    assert request.patch_preview == rows
    assert request.approval_reason.startswith("It edits the messages' bodies (a JSON Patch)")
    created = AuditEntry.objects.get(action="request.created", target_id=str(request.id))
    assert created.details["patch"] == ADD_CURRENCY
    assert created.details["preview"][0] == {"message_id": ids[0], "applies": True}

    # The approver's page shows the patch and the preview.
    page = login(personas["approver"]).get(reverse("request-detail", args=[request.id]))
    html = page.content.decode()
    assert 'id="request-patch"' in html and "&quot;op&quot;: &quot;add&quot;" in html
    assert html.count('class="patch-preview-row applies"') == 10
    approved = login(personas["approver"]).post(
        reverse("request-approve", args=[request.id]), {"comment": "euros, yes"}
    )
    assert approved.status_code == 302

    clock = {"now": 0.0}

    def sleep(seconds):
        clock["now"] += seconds

    request = desk.execute(request, sleep=sleep, clock=lambda: clock["now"])
    assert (request.status, request.done, request.failed, request.skipped) == ("done", N, 0, 0)
    assert request.chunks_total == 3  # 400 a chunk: the rate limit's second
    edits = LakeCommit.objects.filter(dataset="messages", idempotency_key__endswith=":edit")
    assert sorted(edits.values_list("idempotency_key", "row_count")) == [
        (f"decision:{request.id}:0:edit", 400),
        (f"decision:{request.id}:1:edit", 400),
        (f"decision:{request.id}:2:edit", 200),
    ]
    events = desk.decision_events(request.id)
    assert len(events) == N and {e["body_version"] for e in events} == {2}
    assert {e["to_state"] for e in events} == {"TBDL"}

    # Each body is a new version, in the index too; the handler takes them all now.
    member = ids[7]
    assert message_body(message_id=member) == (b'{"order":7,"amount":10,"currency":"EUR"}', JSON)
    indexed = MessageIndex.objects.get(message_id=member)
    assert (indexed.body_version, indexed.body_size) == (2, 40)
    desk.deliver(at=desk.later(minutes=1))
    desk.refresh()
    assert not MessageIndex.objects.exclude(state="DLVD").exists()

    # Its lineage: the original kept, the edit by the operator in this request, the diff.
    versions = desk.lineage(member)
    assert [(v.version, v.request_id, v.actor) for v in versions] == [
        (1, None, ""),
        (2, request.id, "operator"),
    ]
    changed = [line for line in versions[1].diff.lines if line[0] in ("added", "removed")]
    assert changed == [
        ("removed", '  "amount": 10'),
        ("added", '  "amount": 10,'),
        ("added", '  "currency": "EUR"'),
    ]
    assert versions[1].header_changes == []
    page = login(personas["viewer"]).get(reverse("message-detail", args=[member]))
    assert f'href="{reverse("request-detail", args=[request.id])}"' in page.content.decode()


def test_a_patched_body_that_is_not_valid_json_is_refused_before_any_request(desk, personas):
    # A producer wrote NaN, which Python reads and a strict consumer of JSON does not.
    bodies = [f'{{"order": {n}, "amount": NaN}}' for n in range(3)]
    ids, group = _orders(desk, bodies, content_type=JSON)
    said = (
        f"The patch makes a body message '{ids[0]}' cannot have: The message is application/json, "
        "and the patched body is not valid JSON: NaN is not a JSON value at line 1, column 21."
    )

    previewed = login(personas["operator"]).post(_form(group), _posted(ADD_CURRENCY, preview="1"))
    assert previewed.status_code == 400
    assert previewed.context["form"].errors["patch"] == [said]
    assert all(row["refused"] for row in previewed.context["preview"])

    answer = api(personas["operator"]).post(
        "/api/v1/requests",
        {
            "action": "reprocess",
            "scope": {"kind": "group", "group": group.fingerprint},
            "patch": ADD_CURRENCY,
            "comment": "euros",
        },
        format="json",
    )
    assert answer.status_code == 400
    assert answer.json()["detail"] == said
    assert not ActionRequest.objects.exists()

    # The same patch that also mends the amount makes bodies that parse.
    mended = [*ADD_CURRENCY, {"op": "replace", "path": "/amount", "value": 0}]
    previewed = login(personas["operator"]).post(_form(group), _posted(mended, preview="1"))
    assert previewed.status_code == 200
    assert all(row["applies"] for row in previewed.context["preview"])


def test_members_the_patch_does_not_apply_to_are_counted_failed_with_why_and_stay_quarantined(
    desk, personas
):
    bodies = {
        "o-1": '{"order": 1, "channel": "web"}',
        "o-2": '{"order": 2, "channel": "phone"}',
        "o-3": '{"order": 3, "channel": "web"}',
        "o-4": '{"order": 4}',
        "o-5": '{"order": 5, "channel": "web"}',
    }
    desk.queue("orders", handler="tests.handlers_for_tests.booked", max_failed_deliveries=1)
    desk.quarantine("orders", bodies, content_type=JSON)
    # Only web orders are in euros: the others must stay as they are.
    patch = [{"op": "test", "path": "/channel", "value": "web"}, *ADD_CURRENCY]
    request = desk.request({"kind": "selection", "ids": sorted(bodies)}, patch=patch)
    assert [(row["message_id"], row["applies"]) for row in request.patch_preview] == [
        ("o-1", True),
        ("o-2", False),
        ("o-3", True),
        ("o-4", False),
        ("o-5", True),
    ]
    assert request.status == "approved"

    request = desk.execute(request)
    assert (request.status, request.done, request.failed, request.skipped) == ("done", 3, 2, 0)
    (chunk,) = ActionChunk.objects.filter(request=request)
    assert chunk.failures == [
        {
            "message_id": "o-2",
            "reason": "operation 1 (test /channel): the body does not hold the value tested",
        },
        {
            "message_id": "o-4",
            "reason": "operation 1 (test /channel): the body does not hold the value tested",
        },
    ]
    # Nothing lost: the two are quarantined as they were, their bodies untouched.
    for message_id in ("o-2", "o-4"):
        assert desk.index_state(message_id) == "NDLV"
        assert desk.state(message_id)["state"] == "NDLV"
        assert message_body(message_id=message_id)[0] == bodies[message_id].encode()
    assert sorted(e["message_id"] for e in desk.decision_events(request.id)) == [
        "o-1",
        "o-3",
        "o-5",
    ]
    outcome = request_outcome(request=request)
    assert outcome.counts[SKIPPED] == 2 and outcome.total == 5

    # The request page and the API say which, and why.
    page = login(personas["viewer"]).get(reverse("request-detail", args=[request.id]))
    html = page.content.decode()
    assert 'id="edit-failures"' in html and "the body does not hold the value tested" in html
    data = api(personas["viewer"]).get(f"/api/v1/requests/{request.id}").json()
    assert [f["message_id"] for f in data["edit_failures"]] == ["o-2", "o-4"]
    assert data["progress"]["failed"] == 2
