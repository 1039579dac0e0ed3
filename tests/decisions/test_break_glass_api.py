"""/api/v1/requests/<id>/break-glass and /review (R17): every role, the refusals as 4xx that say
why, and the request's JSON showing who broke the glass, when, why, and the review."""

import pytest

from console.decisions.break_glass import break_glass_execute
from console.decisions.models import ActionRequest
from tests.browse.conftest import api
from tests.roles import ROLES, who

REASON = "payments stuck, the shop is down, the other approver is asleep"
GLASS = {"reason": REASON, "confirm": True}


def _broken(personas, request):
    return break_glass_execute(
        actor=personas["approver"], request=request, reason=REASON, confirm=True
    )


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_only_someone_who_may_approve_breaks_the_glass(on, requests, personas, role):
    request = requests.make()
    client = api(personas[role] if role else None)

    response = client.post(f"/api/v1/requests/{request.id}/break-glass", GLASS, format="json")

    expected = {None: 401, "approver": 200}.get(role, 403)
    assert response.status_code == expected, response.content[:300]
    if expected != 200:
        assert "detail" in response.json()
        assert ActionRequest.objects.get(id=request.id).status == "pending"


def test_it_is_a_403_that_says_so_while_break_glass_is_off(requests, personas):
    request = requests.make(by="approver")

    response = api(personas["approver"]).post(
        f"/api/v1/requests/{request.id}/break-glass", GLASS, format="json"
    )

    assert response.status_code == 403
    assert response.json() == {
        "detail": "break-glass is off: an administrator turns it on (BREAK_GLASS)"
    }


def test_the_requester_on_call_breaks_the_glass_and_the_answer_shows_it(on, requests, personas):
    request = requests.make(by="approver")

    response = api(personas["approver"]).post(
        f"/api/v1/requests/{request.id}/break-glass", GLASS, format="json"
    )

    assert response.status_code == 200
    data = response.json()
    assert (data["status"], data["decided_by"], data["break_glass_by"]) == (
        "approved",
        "approver",
        "approver",
    )
    assert data["break_glass_reason"] == REASON
    assert data["break_glass_at"] and data["review_due_at"] and data["expires_at"]
    assert data["review_overdue"] is False
    assert (data["reviewed_by"], data["reviewed_at"], data["review_agrees"]) == (None, None, None)
    assert [e["action"] for e in data["audit"]] == ["request.created", "request.break_glass"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"reason": " ", "confirm": True}, "the reason is required"),
        ({"reason": REASON, "confirm": False}, "2 messages will be reprocessed now"),
        ({"confirm": True}, "reason"),
        ({"reason": REASON}, "confirm"),
        ({"reason": REASON, "confirm": "perhaps"}, "confirm"),
    ],
)
def test_a_break_glass_without_reason_or_confirmation_is_a_400_that_says_why(
    on, requests, personas, body, says
):
    request = requests.make(by="approver")

    response = api(personas["approver"]).post(
        f"/api/v1/requests/{request.id}/break-glass", body, format="json"
    )

    assert response.status_code == 400
    assert says in response.json()["detail"]
    assert ActionRequest.objects.get(id=request.id).status == "pending"


def test_breaking_into_a_request_that_no_longer_waits_is_a_400(on, requests, personas):
    request = requests.approved()

    response = api(personas["approver"]).post(
        f"/api/v1/requests/{request.id}/break-glass", GLASS, format="json"
    )

    assert response.status_code == 400
    assert "no longer waiting for approval" in response.json()["detail"]


@pytest.mark.parametrize("path", ["break-glass", "review"])
def test_an_unknown_request_is_a_404(on, personas, path):
    response = api(personas["approver"]).post(
        f"/api/v1/requests/nope/{path}", {"agrees": True, **GLASS}, format="json"
    )

    assert response.status_code == 404


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_someone_else_who_approves_or_administers_reviews_it(on, requests, personas, role):
    request = _broken(personas, requests.make())  # the operator's, broken by the approver
    client = api(personas[role] if role else None)

    response = client.post(f"/api/v1/requests/{request.id}/review", {"agrees": True}, format="json")

    # The approver broke the glass and the operator asked: neither reviews.
    expected = {None: 401, "admin": 200}.get(role, 403)
    assert response.status_code == expected, response.content[:300]
    if expected == 200:
        data = response.json()
        assert (data["reviewed_by"], data["review_agrees"]) == ("admin", True)
        assert data["audit"][-1]["action"] == "request.break_glass_reviewed"
    else:
        assert ActionRequest.objects.get(id=request.id).reviewed_at is None


def test_a_disagreement_says_why_and_is_shown(on, requests, personas):
    request = _broken(personas, requests.make())
    client = api(personas["admin"])
    url = f"/api/v1/requests/{request.id}/review"

    refused = client.post(url, {"agrees": False}, format="json")
    missing = client.post(url, {"comment": "no"}, format="json")
    response = client.post(url, {"agrees": False, "comment": "it could wait"}, format="json")
    again = client.post(url, {"agrees": True}, format="json")

    assert refused.status_code == 400
    assert refused.json() == {"detail": "disagreeing says why: the comment is required"}
    assert missing.status_code == 400
    assert "agrees" in missing.json()["errors"]
    assert response.status_code == 200
    data = response.json()
    assert (data["review_agrees"], data["review_comment"]) == (False, "it could wait")
    assert again.status_code == 400
    assert "reviewed already" in again.json()["detail"]
