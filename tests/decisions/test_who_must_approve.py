"""R17, who must approve: whatever the count, a decision that edits a body, moves a message to
another queue or ends a conversation waits for a second person, through every route (API,
request form, one click, selection); plain single-message decisions are counted per person,
and past APPROVAL_BUDGET messages in a rolling hour the next ones wait too."""

from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse
from django.utils import timezone

from console.decisions.models import ActionRequest
from console.decisions.services import Action, action_request_create
from tests.browse.conftest import api, login
from tests.conftest import settled

EDIT = {"action": "reprocess", "edited_body": '{"order": 2}'}
MOVE = {"action": "reprocess", "target_queue": "payments"}  # m-01 is in orders
END = {"action": "end_with_error", "error_code": "E1", "error_description": "gone for good"}
WHAT = {"edit": EDIT, "move": MOVE, "end": END}
WHY = {
    "edit": "It edits a message's body: a second person must approve it.",
    "move": "It moves messages to another queue, payments (out of orders)",
    "end": "It ends conversations with an error",
}


def _new(**params):
    return reverse("request-new") + "?" + urlencode(params, doseq=True)


def _selection(client, ids, then="new"):
    response = client.post(reverse("selection-post"), {"ids": "\n".join(ids), "then": then})
    assert response.status_code == 302
    return response["Location"]


def _the_request():
    return ActionRequest.objects.get()


def _waits(request, what):
    assert (request.status, request.needs_approval) == (ActionRequest.PENDING, True)
    assert request.approval_reason.startswith(WHY[what])


@pytest.mark.parametrize("what", WHAT)
def test_through_the_api_one_message_edited_moved_or_ended_waits_for_approval(
    quarantine, personas, what
):
    body = {"scope": {"kind": "message", "id": "m-01"}, "comment": "one only", **WHAT[what]}

    response = api(personas["operator"]).post("/api/v1/requests", body, format="json")

    assert response.status_code == 201, response.json()
    assert response.json()["status"] == "pending"
    assert response.json()["approval_reason"].startswith(WHY[what])
    _waits(_the_request(), what)


@pytest.mark.parametrize("what", WHAT)
def test_through_the_request_form_one_message_edited_moved_or_ended_waits_for_approval(
    index, personas, what
):
    index.message("m-01", '{"order": 1}', state="NDLV")
    index.queue("payments")
    client = login(personas["operator"])

    response = client.post(_new(scope="message", id="m-01"), {"comment": "one only", **WHAT[what]})

    assert response.status_code == 302, response.content.decode()[-2000:]
    request = _the_request()
    _waits(request, what)
    page = client.get(reverse("request-detail", args=[request.id])).content.decode()
    assert "waiting for a second person" in page
    assert 'id="request-approval-reason"' in page


@pytest.mark.parametrize("what", ["move", "end"])
def test_through_a_selection_of_one_message_moved_or_ended_waits_for_approval(
    quarantine, personas, what
):
    client = login(personas["operator"])
    form = _selection(client, ["m-01"])

    response = client.post(form, {"comment": "one only", **WHAT[what]})

    assert response.status_code == 302, response.content.decode()[-2000:]
    _waits(_the_request(), what)


def test_in_one_click_ending_one_selected_message_says_it_waits_and_waits(quarantine, personas):
    client = login(personas["operator"])
    confirm = _selection(client, ["m-01"], then="end_with_error")

    page = client.get(confirm).content.decode()
    assert "It ends conversations with an error" in page
    assert "ask for approval" in page
    client.post(confirm, {"error_code": "E1", "error_description": "gone for good"})

    _waits(_the_request(), "end")


def test_a_reprocess_into_the_queue_the_message_is_in_is_no_move(quarantine, personas):
    response = api(personas["operator"]).post(
        "/api/v1/requests",
        {
            "action": "reprocess",
            "target_queue": "orders",
            "scope": {"kind": "message", "id": "m-01"},
            "comment": "same queue",
        },
        format="json",
    )

    assert response.json()["status"] == "approved"
    assert response.json()["approval_reason"] == ""


def _plain(actor, message_id, kind="reprocess"):
    return action_request_create(
        actor=actor,
        scope={"kind": "message", "id": message_id},
        action=Action(kind=kind),
        comment="one at a time",
    )


def _second_operator():
    other = User.objects.create_user("operator2", password="pw-operator2-1234")
    other.groups.add(Group.objects.get(name="operator"))
    return settled(other)


def test_the_21st_plain_decision_of_one_operator_in_an_hour_waits_and_anothers_first_does_not(
    quarantine, personas, settings
):
    settings.APPROVAL_BUDGET = 20
    operator = personas["operator"]
    # Twenty single-message decisions, reprocess and fail alike (each id stays NDLV in the
    # index: nothing executes them here), all without approval.
    firsts = [
        _plain(operator, f"m-{i % 10:02d}", "fail" if i % 3 else "reprocess") for i in range(20)
    ]
    assert {r.status for r in firsts} == {ActionRequest.APPROVED}

    the_21st = _plain(operator, "m-05")
    anothers_first = _plain(_second_operator(), "m-05")

    assert (the_21st.status, the_21st.needs_approval) == (ActionRequest.PENDING, True)
    assert (
        "You have decided 20 messages without approval in the last hour" in the_21st.approval_reason
    )
    assert "APPROVAL_BUDGET" not in the_21st.approval_reason  # the setting is the admin's word
    assert (anothers_first.status, anothers_first.needs_approval) == (ActionRequest.APPROVED, False)


def test_the_budget_is_a_rolling_hour(quarantine, personas, settings):
    settings.APPROVAL_BUDGET = 2
    operator = personas["operator"]
    old = [_plain(operator, "m-01"), _plain(operator, "m-02")]
    assert _plain(operator, "m-03").status == ActionRequest.PENDING

    # An hour and a minute later the first two are out of the window.
    an_hour_ago = timezone.now() - timedelta(hours=1, minutes=1)
    ActionRequest.objects.filter(id__in=[r.id for r in old]).update(created_at=an_hour_ago)

    assert _plain(operator, "m-04").status == ActionRequest.APPROVED


def test_what_waited_for_approval_does_not_spend_the_budget(quarantine, personas, settings):
    settings.APPROVAL_BUDGET = 1
    operator = personas["operator"]
    ended = action_request_create(
        actor=operator,
        scope={"kind": "message", "id": "m-01"},
        action=Action(kind="end_with_error", error_code="E", error_description="d"),
        comment="needs approval anyway",
    )
    assert ended.status == ActionRequest.PENDING

    assert _plain(operator, "m-02").status == ActionRequest.APPROVED


def test_the_one_click_confirmation_says_the_budget_is_spent(quarantine, personas, settings):
    settings.APPROVAL_BUDGET = 0
    client = login(personas["operator"])
    confirm = _selection(client, ["m-01"], then="reprocess")

    page = client.get(confirm).content.decode()

    assert "past 0 messages an hour your requests wait" in page
    assert "ask for approval" in page


def test_the_request_form_says_what_needs_approval_and_what_is_left_of_the_budget(
    quarantine, personas, settings
):
    settings.APPROVAL_BUDGET = 3
    client = login(personas["operator"])
    _plain(personas["operator"], "m-02")

    page = client.get(_new(scope="message", id="m-01")).content.decode()
    assert "moves messages to another queue or ends conversations" in page
    assert "You may decide 2 more messages without approval this hour (1 of 3 used)." in page

    _plain(personas["operator"], "m-03")
    _plain(personas["operator"], "m-04")
    page = client.get(_new(scope="message", id="m-01")).content.decode()
    assert "Your requests wait for approval now: you have decided 3 messages" in page
