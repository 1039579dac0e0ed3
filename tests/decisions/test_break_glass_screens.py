"""Break-glass on the screens (R17): the form on the request page, its refusals, the review form
for someone else, what the page says of both, and the dashboard's panel of decisions waiting for
their review. Permissions are checked on the server whatever the page offers."""

import pytest
from django.urls import reverse

from console.decisions.break_glass import break_glass_execute
from console.decisions.models import ActionRequest
from tests.browse.conftest import login
from tests.roles import ROLES, who

REASON = "the shop is down <b>now</b>"


def _page(user, request):
    return login(user).get(reverse("request-detail", args=[request.id])).content.decode()


def _broken(personas, request):
    return break_glass_execute(
        actor=personas["approver"], request=request, reason=REASON, confirm=True
    )


def test_the_form_is_offered_to_approvers_and_administrators_only_while_break_glass_is_on(
    requests, personas, settings
):
    own = requests.make(by="approver")
    assert 'id="break-glass-form"' not in _page(personas["approver"], own)

    settings.BREAK_GLASS = True

    page = _page(personas["approver"], own)
    assert 'id="break-glass-form"' in page
    assert "2 messages will be reprocessed now, without a second person&#x27;s approval" in page
    assert 'id="break-glass-form"' in _page(personas["admin"], own)
    for role in ("viewer", "operator", "auditor"):
        assert 'id="break-glass-form"' not in _page(personas[role], own), role


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_breaking_the_glass_is_checked_on_the_server(on, requests, personas, role):
    request = requests.make()
    client = login(personas[role] if role else None)

    response = client.post(
        reverse("request-break-glass", args=[request.id]), {"reason": REASON, "confirm": "on"}
    )

    expected = {None: 302, "approver": 302, "admin": 302}.get(role, 403)
    assert response.status_code == expected
    status = ActionRequest.objects.get(id=request.id).status
    assert status == ("approved" if role in ("approver", "admin") else "pending")


def test_a_break_glass_without_confirmation_or_reason_is_refused_with_why(on, requests, personas):
    request = requests.make(by="approver")
    client = login(personas["approver"])
    url = reverse("request-break-glass", args=[request.id])

    unconfirmed = client.post(url, {"reason": REASON}, follow=True).content.decode()
    unexplained = client.post(url, {"reason": " ", "confirm": "on"}, follow=True).content.decode()

    assert "confirm that you know what happens" in unconfirmed
    assert "the reason is required" in unexplained
    assert ActionRequest.objects.get(id=request.id).status == "pending"


def test_the_page_says_who_broke_the_glass_when_why_and_the_review(on, requests, personas):
    request = _broken(personas, requests.make())

    mine = _page(personas["approver"], request)
    assert 'id="break-glass-by">approver <time' in mine
    assert "the shop is down &lt;b&gt;now&lt;/b&gt;" in mine  # as text
    assert 'id="review-due"' in mine
    assert "waiting for someone else's review" in mine
    assert 'id="review-form"' not in mine  # the breaker does not review
    assert 'id="review-form"' not in _page(personas["operator"], request)  # nor the requester
    assert 'id="review-form"' in _page(personas["admin"], request)

    response = login(personas["admin"]).post(
        reverse("request-review", args=[request.id]),
        {"verdict": "disagree", "comment": "it could have waited"},
    )

    assert response.status_code == 302
    page = _page(personas["approver"], request)
    assert "disagreed by admin <time" in page
    assert "it could have waited" in page
    assert 'id="review-form"' not in _page(personas["admin"], request)


def test_a_review_is_checked_on_the_server(on, requests, personas):
    request = _broken(personas, requests.make())
    url = reverse("request-review", args=[request.id])

    assert login(personas["approver"]).post(url, {"verdict": "agree"}).status_code == 403
    assert login(personas["operator"]).post(url, {"verdict": "agree"}).status_code == 403
    assert login(personas["viewer"]).post(url, {"verdict": "agree"}).status_code == 403
    unexplained = login(personas["admin"]).post(url, {"verdict": "disagree"}, follow=True)
    assert "disagreeing says why" in unexplained.content.decode()
    assert ActionRequest.objects.get(id=request.id).reviewed_at is None


def test_the_dashboard_lists_unreviewed_decisions_until_they_are_reviewed(on, requests, personas):
    request = _broken(personas, requests.make())
    link = reverse("request-detail", args=[request.id])

    for role in ("viewer", "operator", "approver", "admin"):
        page = login(personas[role]).get(reverse("dashboard")).content.decode()
        assert 'id="break-glass-unreviewed"' in page, role
        assert f'href="{link}">Request {request.id}</a>' in page, role

    login(personas["admin"]).post(
        reverse("request-review", args=[request.id]), {"verdict": "agree"}
    )

    page = login(personas["approver"]).get(reverse("dashboard")).content.decode()
    assert 'id="break-glass-unreviewed"' not in page
