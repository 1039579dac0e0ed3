"""Where break-glass is found (R17): a pending request's page points an approver or an
administrator to its form, with what it is and that it is audited; the requests list links each
pending request's form for them; while an administrator has not turned it on, its page tells
them it exists. Nobody else sees any of it, and the server refuses them whatever they post."""

import pytest
from django.urls import reverse

from console.decisions.models import ActionRequest
from tests.browse.conftest import login
from tests.conftest import settled

OTHERS = ("viewer", "operator", "auditor")


def _page(user, request):
    return login(user).get(reverse("request-detail", args=[request.id])).content.decode()


def _list(user):
    response = login(user).get(reverse("request-list"))
    assert response.status_code == 200
    return response.content.decode()


def test_a_pending_request_points_approvers_and_administrators_to_its_break_glass(
    on, requests, personas
):
    request = requests.make()

    for role in ("approver", "admin"):
        page = _page(personas[role], request)
        assert 'id="break-glass-offer"' in page, role
        assert 'href="#break-glass"' in page
        assert "It is audited" in page
        assert 'id="break-glass-form"' in page
    for role in OTHERS:
        page = _page(personas[role], request)
        assert 'id="break-glass-offer"' not in page, role
        assert "#break-glass" not in page, role


def test_no_break_glass_is_offered_once_the_request_is_decided(on, requests, personas):
    request = requests.approved()

    page = _page(personas["admin"], request)

    assert 'id="break-glass-offer"' not in page
    assert 'id="break-glass-form"' not in page


def test_an_approver_learns_that_break_glass_is_off_and_who_turns_it_on(requests, personas):
    request = requests.make()

    page = _page(personas["approver"], request)

    assert 'id="break-glass-off"' in page
    assert "an administrator turns it on" in page
    assert 'id="break-glass-offer"' not in page
    for role in OTHERS:
        assert 'id="break-glass-off"' not in _page(personas[role], request), role


def test_the_requests_list_links_pending_requests_to_break_glass_for_those_who_may(
    on, requests, personas
):
    pending = requests.make()
    approved = requests.approved()

    page = _list(personas["approver"])

    assert 'id="break-glass-hint"' in page
    assert f'href="/requests/{pending.id}/#break-glass"' in page
    assert f'href="/requests/{approved.id}/#break-glass"' not in page
    assert 'class="break-glass-link"' in _list(personas["admin"])
    for role in OTHERS:
        page = _list(personas[role])
        assert 'id="break-glass-hint"' not in page, role
        assert "break-glass-link" not in page, role


def test_the_requests_list_has_no_break_glass_link_while_it_is_off(requests, personas):
    requests.make()

    page = _list(personas["approver"])

    assert 'id="break-glass-hint"' not in page
    assert "break-glass-link" not in page


def test_an_approver_in_their_cool_down_is_not_sent_to_a_form_they_cannot_use(
    on, requests, personas
):
    requests.make()
    fresh = settled(personas["approver"], days=0)

    page = _list(fresh)

    assert "break-glass-link" not in page


@pytest.mark.parametrize("role", OTHERS)
def test_the_break_glass_address_answers_others_403(on, requests, personas, role):
    request = requests.make()

    response = login(personas[role]).post(
        reverse("request-break-glass", args=[request.id]), {"reason": "now", "confirm": "on"}
    )

    assert response.status_code == 403
    assert ActionRequest.objects.get(id=request.id).status == "pending"
