"""Issue 34, item 2, against a real directory (Debian's slapd, started by the test on its own
port and data folder, over STARTTLS): sign-in with the directory's password, groups to roles, a
group left taking effect at the next sign-in, a deleted account deactivated by the periodic
check; separation of duties and the cool-down as with OpenID Connect."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from console.access.models import ProviderRole, RoleGrant
from console.access.rights import approver_cooldown_check, approver_cooldown_until
from console.access.services import role_grant_confirm
from console.audit.models import AuditEntry
from console.sso.models import ProviderAccount
from console.sso.tasks import directory_accounts_check_task

pytestmark = [pytest.mark.django_db]
PASSWORD = "her directory password"


def _roles(username):
    return sorted(User.objects.get(username=username).groups.values_list("name", flat=True))


def _login(client, username, password=PASSWORD):
    return client.post("/login/", {"username": username, "password": password})


def _cools_down(user, *, since, settings):
    """`user` approves nothing for APPROVER_COOLDOWN_HOURS from `since`."""
    assert approver_cooldown_until(user) >= since + timedelta(
        hours=settings.APPROVER_COOLDOWN_HOURS
    )
    with pytest.raises(PermissionDenied, match="may approve from"):
        approver_cooldown_check(user)


def test_a_person_in_the_ops_group_signs_in_with_their_directory_password(
    personas, directory, client
):
    dn = directory.person("dana", password=PASSWORD, groups=["ops"], name="Dana Scully")

    answer = _login(client, "dana")

    assert answer.status_code == 302
    dana = User.objects.get(username="dana")
    assert client.session["_auth_user_id"] == str(dana.pk)
    assert (dana.first_name, dana.last_name, dana.email) == ("Dana", "Scully", "dana@example.com")
    assert not dana.has_usable_password()
    assert _roles("dana") == ["operator"]
    assert ProviderAccount.objects.get(user=dana).subject == dn
    assert ProviderRole.objects.get(user=dana).provider == "ldap"
    signed_in = AuditEntry.objects.get(action="sso.signed_in")
    assert signed_in.actor == "provider:ldap" and signed_in.details["added"] == ["operator"]
    assert client.get("/").status_code == 200


def test_a_wrong_password_is_a_failed_login(personas, directory, client):
    directory.person("dana", password=PASSWORD, groups=["ops"])

    answer = _login(client, "dana", "not her password")

    assert answer.status_code == 200
    assert "did not match" in answer.content.decode()
    assert not User.objects.filter(username="dana").exists()
    assert AuditEntry.objects.filter(action="login.failed", target_id="dana").exists()


def test_a_group_left_is_a_role_lost_at_the_next_sign_in(personas, directory, client):
    directory.person("dana", password=PASSWORD, groups=["ops", "auditors"])
    _login(client, "dana")
    assert _roles("dana") == ["auditor", "operator"]
    client.post("/logout/")

    directory.leave("dana", "auditors")
    _login(client, "dana")

    assert _roles("dana") == ["operator"]
    removed = AuditEntry.objects.filter(action="user.roles_changed", target_id="dana").last()
    assert removed.actor == "provider:ldap" and removed.details["removed"] == ["auditor"]


def test_a_person_whose_groups_give_no_role_is_told_why(personas, directory, client):
    directory.person("eve", password=PASSWORD, groups=["marketing"])

    answer = _login(client, "eve")

    assert answer.status_code == 200
    assert "your groups give you no role here" in answer.content.decode()
    assert "_auth_user_id" not in client.session


def test_a_local_account_of_the_same_name_is_never_taken_over(personas, directory, client):
    directory.person("operator", password=PASSWORD, groups=["leads"])

    answer = _login(client, "operator")

    assert "_auth_user_id" not in client.session
    assert "exists here already and is not linked" in answer.content.decode()
    assert not ProviderAccount.objects.exists()


def test_a_deleted_account_is_deactivated_by_the_periodic_check(personas, directory, client):
    directory.person("dana", password=PASSWORD, groups=["ops"])
    directory.person("fox", password=PASSWORD, groups=["ops"])
    _login(client, "dana")
    client.post("/logout/")
    _login(client, "fox")

    directory.delete("dana")
    checked, gone = directory_accounts_check_task()

    assert (checked, gone) == (2, 1)
    assert not User.objects.get(username="dana").is_active
    assert User.objects.get(username="fox").is_active
    refused = AuditEntry.objects.get(action="sso.refused")
    assert refused.actor == "provider:ldap" and refused.target_id == "dana"
    assert directory_accounts_check_task() == (1, 0)  # the deactivated one is not asked again


def test_a_deactivated_persons_session_ends_with_the_check(personas, directory, client):
    directory.person("dana", password=PASSWORD, groups=["ops"])
    _login(client, "dana")
    assert client.get("/").status_code == 200

    directory.delete("dana")
    directory_accounts_check_task()

    answer = client.get("/")
    assert answer.status_code == 302 and answer["Location"].startswith("/login/")


def test_the_check_judges_nobody_when_the_people_branch_is_missing(
    personas, directory, client, settings
):
    directory.person("dana", password=PASSWORD, groups=["ops"])
    _login(client, "dana")
    settings.LDAP_USER_SEARCH_BASE = "ou=staff,dc=example,dc=com"

    with pytest.raises(LookupError, match="no account was judged"):
        directory_accounts_check_task()

    assert User.objects.get(username="dana").is_active


def test_the_leads_group_waits_for_an_administrators_confirmation_and_the_cool_down(
    personas, directory, client, settings
):
    settings.SSO_TRUST_PRIVILEGED_GROUPS = False  # the default: every growing role waits (R19)
    directory.person("lead", password=PASSWORD, groups=["ops", "leads"])

    _login(client, "lead")

    assert _roles("lead") == []
    assert set(RoleGrant.objects.values_list("role__name", "status")) == {
        ("operator", "pending"),
        ("approver", "pending"),
    }
    grant = RoleGrant.objects.get(user__username="lead", role__name="approver")
    assert (grant.status, grant.source) == ("pending", "ldap")
    assert grant.source_groups == ["cn=leads,ou=groups,dc=example,dc=com"]
    confirmed_at = timezone.now()
    role_grant_confirm(actor=personas["admin"], grant=grant)
    lead = User.objects.get(username="lead")
    assert _roles("lead") == ["approver"]
    _cools_down(lead, since=confirmed_at, settings=settings)


def test_trusting_the_directory_gives_the_approver_role_at_sign_in_with_the_cool_down(
    personas, directory, client, settings
):
    settings.SSO_TRUST_PRIVILEGED_GROUPS = True
    directory.person("lead", password=PASSWORD, groups=["leads"])
    signed_in_at = timezone.now()

    _login(client, "lead")

    lead = User.objects.get(username="lead")
    assert _roles("lead") == ["approver"]
    assert not RoleGrant.objects.exists()
    _cools_down(lead, since=signed_in_at, settings=settings)


def test_with_local_passwords_off_directory_people_still_sign_in(
    personas, directory, client, settings
):
    settings.LOCAL_PASSWORDS = False
    settings.LOCAL_PASSWORD_USERS = ["admin"]
    directory.person("dana", password=PASSWORD, groups=["ops"])

    assert _login(client, "dana").status_code == 302
    client.post("/logout/")
    assert _login(client, "operator", "pw-operator-1234").status_code == 200  # local: refused


def test_the_directorys_certificate_is_checked(personas, directory, client, settings):
    directory.person("dana", password=PASSWORD, groups=["ops"])
    settings.LDAP_CA_FILE = ""  # the test's certificate is in no trusted store

    answer = _login(client, "dana")

    assert answer.status_code == 200 and "_auth_user_id" not in client.session


def test_without_starttls_the_directory_refuses_to_talk(personas, directory, client, settings):
    directory.person("dana", password=PASSWORD, groups=["ops"])
    settings.LDAP_START_TLS = False  # this directory takes no password in clear

    assert "_auth_user_id" not in client.session
    assert _login(client, "dana").status_code == 200
