"""My account (issue 34, item 5): everyone signed in sees their roles, where each came from and
what each lets them do, in words, never as codenames; and sets the e-mail address their e-mail
alerts go to, checked, audited, and shown as inert text. The same through /api/v1/account."""

import re

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse
from django.utils.html import escape

from console.access.selectors import role_permissions
from console.access.services import role_grant_confirm, role_grant_request
from console.audit.models import AuditEntry
from console.permissions import permission_words
from tests.browse.conftest import api, login
from tests.conftest import settled

HOSTILE = '"><script>alert(1)</script>@example.com'


def _page(user):
    answer = login(user).get(reverse("my-account"))
    assert answer.status_code == 200
    return answer.content.decode()


@pytest.mark.parametrize("role", ["viewer", "operator", "approver", "admin", "auditor"])
def test_each_persona_sees_their_role_and_what_it_lets_them_do_in_words(personas, role):
    page = _page(personas[role])

    assert f'data-role="{role}"' in page
    assert "Given by an administrator" in page
    held = role_permissions(Group.objects.get(name=role))
    assert held and all(f"<li>{escape(words)}</li>" in page for words in held)
    assert not re.search(r"<li>\w+\.\w+_\w+</li>", page)  # never a codename


def test_someone_with_no_role_is_told_so(personas):
    page = _page(personas["outsider"])

    assert 'id="account-no-roles"' in page
    assert "account-role" not in page


def test_a_role_from_a_confirmed_grant_names_who_granted_and_who_confirmed_it(personas):
    admin2 = User.objects.create_user("admin2", password="pw-admin2-1234")
    admin2.groups.add(Group.objects.get(name="admin"))
    admin2 = settled(admin2)
    grant = role_grant_request(
        actor=personas["admin"],
        user=personas["operator"],
        role=Group.objects.get(name="approver"),
        comment="on the night rota",
    )
    role_grant_confirm(actor=admin2, grant=grant)

    page = _page(personas["operator"])

    assert 'data-role="approver"' in page
    assert "Granted by admin, confirmed by admin2 on" in page


def test_the_email_address_is_set_checked_and_audited(personas):
    client = login(personas["operator"])

    answer = client.post(reverse("my-account"), {"email": "Night.Shift@Example.COM"})

    assert answer.status_code == 302
    user = User.objects.get(pk=personas["operator"].pk)
    assert user.email == "Night.Shift@example.com"  # the domain lower-cased, the rest as typed
    entry = AuditEntry.objects.get(action="account.email_changed")
    assert (entry.actor, entry.target_id) == ("operator", "operator")
    assert entry.details == {"before": "", "after": "Night.Shift@example.com"}
    assert "Night.Shift@example.com" in client.get(reverse("my-account")).content.decode()


def test_an_address_that_is_not_one_is_refused_as_inert_text_and_nothing_changes(personas):
    client = login(personas["operator"])

    answer = client.post(reverse("my-account"), {"email": HOSTILE})

    assert answer.status_code == 400
    page = answer.content.decode()
    assert "is not an e-mail address" in page
    assert "<script>alert(1)</script>" not in page
    assert User.objects.get(pk=personas["operator"].pk).email == ""
    assert not AuditEntry.objects.filter(action="account.email_changed").exists()


def test_an_empty_address_removes_it_and_the_same_one_again_is_not_audited(personas):
    client = login(personas["viewer"])
    client.post(reverse("my-account"), {"email": "viewer@example.com"})
    client.post(reverse("my-account"), {"email": "viewer@example.com"})
    client.post(reverse("my-account"), {"email": ""})

    assert User.objects.get(pk=personas["viewer"].pk).email == ""
    changes = AuditEntry.objects.filter(action="account.email_changed").order_by("seq")
    assert [e.details["after"] for e in changes] == ["viewer@example.com", ""]


def test_the_page_needs_sign_in(db):
    answer = login().get(reverse("my-account"))

    assert answer.status_code == 302 and "/login" in answer["Location"]


def test_the_api_reads_the_account_and_sets_the_address(personas):
    client = api(personas["approver"])

    read = client.get("/api/v1/account")
    assert read.status_code == 200
    assert read.json()["username"] == "approver"
    (role,) = read.json()["roles"]
    assert role["name"] == "approver" and role["granted_by"] is None
    assert permission_words("decisions.approve_actionrequest") in role["permissions"]

    changed = client.patch("/api/v1/account", {"email": "approver@example.com"}, format="json")
    assert changed.status_code == 200 and changed.json()["email"] == "approver@example.com"

    refused = client.patch("/api/v1/account", {"email": "not an address"}, format="json")
    assert refused.status_code == 400
    assert "is not an e-mail address" in refused.json()["detail"]


def test_the_api_needs_credentials(db):
    assert api().get("/api/v1/account").status_code == 401
