"""An account created, or whose rights changed, within APPROVER_COOLDOWN_HOURS cannot approve:
an account cannot be made, or promoted, and used at once."""

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied

from console.access.rights import approver_cooldown_check
from console.decisions.models import ActionRequest
from tests.conftest import settled

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def cool_down(settings):
    settings.APPROVER_COOLDOWN_HOURS = 24


@pytest.fixture
def fresh_approver(personas):
    """An approver whose account was made just now."""
    fresh = User.objects.create_user("fresh", password="pw-fresh-1234")
    fresh.groups.add(Group.objects.get(name="approver"))
    return User.objects.get(pk=fresh.pk)


@pytest.fixture
def pending(personas):
    """An operator's request waiting for approval."""
    return ActionRequest.objects.create(
        requester=personas["operator"],
        action=ActionRequest.REPROCESS,
        status=ActionRequest.PENDING,
        count=1,
        ids_sha256="0" * 64,
        ids_path="none",
        scope={"kind": "message", "id": "m1"},
        comment="the handler is fixed",
        needs_approval=True,
    )


def test_an_account_younger_than_the_cool_down_cannot_approve(fresh_approver):
    with pytest.raises(PermissionDenied, match="less than 24 hours ago"):
        approver_cooldown_check(fresh_approver)
    approver_cooldown_check(settled(fresh_approver, days=2))


def test_a_role_added_to_an_old_account_starts_the_cool_down_again(personas):
    old = settled(User.objects.create_user("old", password="pw-old-1234"))
    approver_cooldown_check(old)
    old.groups.add(Group.objects.get(name="approver"))
    with pytest.raises(PermissionDenied):
        approver_cooldown_check(old)


def test_the_cool_down_holds_on_the_api_approval(client, fresh_approver, pending):
    client.force_login(fresh_approver)
    response = client.post(
        f"/api/v1/requests/{pending.id}/approve", {}, content_type="application/json"
    )
    assert response.status_code == 403
    assert "hours ago" in response.json()["detail"]
    assert ActionRequest.objects.get(pk=pending.pk).status == ActionRequest.PENDING


def test_the_request_page_tells_a_cooling_approver_when_it_may_approve(
    client, personas, fresh_approver, pending
):
    client.force_login(fresh_approver)
    page = client.get(f"/requests/{pending.id}/").content.decode()
    assert 'id="cooldown-note"' in page and 'id="approve-submit"' not in page
    client.force_login(personas["approver"])
    page = client.get(f"/requests/{pending.id}/").content.decode()
    assert 'id="cooldown-note"' not in page and 'id="approve-submit"' in page
