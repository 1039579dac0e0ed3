"""The role matrix of issue 12: every route that can change users, roles, permissions or tokens
(the console, the Django admin, the API, management commands) leaves its audit entry, with the
person who took it (or the server account that ran the command) as actor."""

import getpass
import io
import sys

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command

from console.access.services import role_grant_request
from console.accounts.models import ApiToken
from console.accounts.tokens.services import token_create
from console.audit.models import AuditEntry
from tests.admin_forms import admin_user_form
from tests.conftest import settled

pytestmark = pytest.mark.django_db

CLI = f"cli:{getpass.getuser()}"


def _viewer():
    return Group.objects.get(name="viewer")


@pytest.fixture
def someone(personas):
    return settled(User.objects.create_user("someone", password="pw-someone-1234"))


def _console_role_given(client, personas, someone, second_admin):
    # A role that adds nothing the operator holds not already: given at once.
    client.force_login(personas["admin"])
    client.post("/role-grants/", {"user": "operator", "role": "viewer"})


def _console_growing_role_asked(client, personas, someone, second_admin):
    client.force_login(personas["admin"])
    client.post("/role-grants/", {"user": "someone", "role": "viewer"})


def _console_sending_by_hand_asked(client, personas, someone, second_admin):
    from console.queues.models import Queue

    Queue.objects.create(name="orders", handler="tests.handlers_for_tests.always_ok")
    client.force_login(personas["admin"])
    client.post("/role-grants/", {"user": "operator", "queue": "orders"})


def _console_grant_asked(client, personas, someone, second_admin):
    client.force_login(personas["admin"])
    client.post("/role-grants/", {"user": "someone", "role": "approver"})


def _console_grant_confirmed(client, personas, someone, second_admin):
    grant = role_grant_request(
        actor=personas["admin"], user=someone, role=Group.objects.get(name="approver")
    )
    client.force_login(second_admin)
    client.post(f"/role-grants/{grant.id}/confirm")


def _console_service_account_made(client, personas, someone, second_admin):
    client.force_login(personas["admin"])
    client.post("/account/service-accounts/new", {"username": "shop-producer"})


def _console_token_revoked(client, personas, someone, second_admin):
    token, _ = token_create(actor=personas["admin"], user=personas["application"], name="old")
    client.force_login(personas["admin"])
    client.post(f"/account/tokens/{token.token_key}/revoke")


def _console_service_token_made(client, personas, someone, second_admin):
    client.force_login(personas["admin"])
    client.post(
        "/account/service-tokens/", {"account": "application", "name": "billing", "days": 30}
    )


def _console_lockout_lifted(client, personas, someone, second_admin):
    client.force_login(personas["admin"])
    client.post("/lockouts/lift", {"username": "someone"})


def _admin_user_added(client, personas, someone, second_admin):
    client.force_login(personas["admin"])
    client.post(
        "/admin/auth/user/add/",
        {
            "username": "carol",
            "usable_password": "true",
            "password1": "Xq7-long-pass!",
            "password2": "Xq7-long-pass!",
        },
    )


def _admin_roles_asked(client, personas, someone, second_admin):
    client.force_login(personas["admin"])
    client.post(
        f"/admin/auth/user/{someone.pk}/change/", admin_user_form(someone, groups=[_viewer().pk])
    )


def _admin_roles_taken(client, personas, someone, second_admin):
    client.force_login(personas["admin"])
    client.post(f"/admin/auth/user/{someone.pk}/change/", admin_user_form(someone, groups=[]))


_admin_roles_taken.before = lambda: User.objects.get(username="someone").groups.add(_viewer())


def _admin_deactivated(client, personas, someone, second_admin):
    client.force_login(personas["admin"])
    client.post(f"/admin/auth/user/{someone.pk}/change/", admin_user_form(someone, is_active=""))


def _admin_password_set(client, personas, someone, second_admin):
    client.force_login(personas["admin"])
    client.post(
        f"/admin/auth/user/{someone.pk}/password/",
        {"usable_password": "true", "password1": "Zz9-other-pass", "password2": "Zz9-other-pass"},
    )


def _admin_deleted(client, personas, someone, second_admin):
    client.force_login(personas["admin"])
    client.post(f"/admin/auth/user/{someone.pk}/delete/", {"post": "yes"})


def _admin_role_permissions(client, personas, someone, second_admin):
    # Taken away: adding one to a role someone holds is refused from the web (R19).
    client.force_login(User.objects.create_superuser("root", password="pw-root-1234"))
    viewer = _viewer()
    kept = viewer.permissions.exclude(codename="view_note").values_list("pk", flat=True)
    client.post(f"/admin/auth/group/{viewer.pk}/change/", {"name": "viewer", "permissions": kept})


def _api_role_given(client, personas, someone, second_admin):
    client.force_login(personas["admin"])
    client.post(
        "/api/v1/role-grants",
        {"user": "operator", "role": "viewer"},
        content_type="application/json",
    )


def _api_grant_confirmed(client, personas, someone, second_admin):
    grant = role_grant_request(
        actor=personas["admin"], user=someone, role=Group.objects.get(name="approver")
    )
    client.force_login(second_admin)
    client.post(f"/api/v1/role-grants/{grant.id}/confirm", content_type="application/json")


def _api_token_made(client, personas, someone, second_admin):
    client.force_login(personas["admin"])
    client.post(
        "/api/v1/tokens?user=application",
        {"name": "ci", "days": 7},
        content_type="application/json",
    )


def _api_token_revoked(client, personas, someone, second_admin):
    token, _ = token_create(actor=personas["admin"], user=personas["application"], name="old")
    client.force_login(personas["admin"])
    client.delete(f"/api/v1/tokens/{token.token_key}")


def _api_lockout_lifted(client, personas, someone, second_admin):
    client.force_login(personas["admin"])
    client.post("/api/v1/lockouts/lift", {"username": "someone"}, content_type="application/json")


def _command_demo_users(client, personas, someone, second_admin):
    call_command("create_demo_users", stdout=io.StringIO())


def _command_token(client, personas, someone, second_admin):
    call_command(
        "token_create", "application", "--name", "feed", stdout=io.StringIO(), stderr=io.StringIO()
    )


def _command_changepassword(client, personas, someone, second_admin):
    # As the shell runs it: `manage.py changepassword someone`.
    argv = sys.argv
    sys.argv = ["manage.py", "changepassword", "someone"]
    try:
        someone.set_password("Yy8-from-the-shell")
        someone.save()
    finally:
        sys.argv = argv


def _command_seed_roles(client, personas, someone, second_admin):
    call_command("seed_roles", stdout=io.StringIO())


# What a route needs done before it, and not recorded as its own doing.
_command_seed_roles.before = lambda: Group.objects.get(name="viewer").permissions.clear()


MATRIX = [
    # (route, what it does, action recorded, target, actor)
    ("console", _console_role_given, "user.roles_changed", "operator", "admin"),
    ("console", _console_growing_role_asked, "role_grant.requested", None, "admin"),
    ("console", _console_sending_by_hand_asked, "role_grant.requested", None, "admin"),
    ("console", _console_grant_asked, "role_grant.requested", None, "admin"),
    ("console", _console_grant_confirmed, "role_grant.confirmed", None, "admin2"),
    ("console", _console_grant_confirmed, "user.roles_changed", "someone", "admin2"),
    ("console", _console_service_account_made, "user.created", "shop-producer", "admin"),
    ("console", _console_token_revoked, "token.revoked", "application", "admin"),
    ("console", _console_service_token_made, "token.created", "application", "admin"),
    ("console", _console_lockout_lifted, "login.lockout_lifted", "someone", "admin"),
    ("django admin", _admin_user_added, "user.created", "carol", "admin"),
    ("django admin", _admin_roles_asked, "role_grant.requested", None, "admin"),
    ("django admin", _admin_roles_taken, "user.roles_changed", "someone", "admin"),
    ("django admin", _admin_deactivated, "user.deactivated", "someone", "admin"),
    ("django admin", _admin_password_set, "user.password_set", "someone", "admin"),
    ("django admin", _admin_deleted, "user.deleted", "someone", "admin"),
    ("django admin", _admin_role_permissions, "role.permissions_changed", "viewer", "root"),
    ("api", _api_role_given, "user.roles_changed", "operator", "admin"),
    ("api", _api_grant_confirmed, "role_grant.confirmed", None, "admin2"),
    ("api", _api_token_made, "token.created", "application", "admin"),
    ("api", _api_token_revoked, "token.revoked", "application", "admin"),
    ("api", _api_lockout_lifted, "login.lockout_lifted", "someone", "admin"),
    ("command", _command_demo_users, "user.password_set", "viewer", CLI),
    ("command", _command_demo_users, "user.created", "admin2", CLI),
    ("command", _command_token, "token.created", "application", CLI),
    ("command", _command_changepassword, "user.password_set", "someone", CLI),
    ("command", _command_seed_roles, "role.permissions_changed", "viewer", CLI),
]


@pytest.mark.parametrize(
    ("route", "act", "action", "target", "actor"),
    MATRIX,
    ids=[f"{m[0]}: {m[1].__name__.lstrip('_')} -> {m[2]}" for m in MATRIX],
)
def test_every_route_that_changes_rights_is_in_the_audit_trail(
    client, personas, someone, route, act, action, target, actor, request
):
    # The demo's command makes the second administrator itself.
    second_admin = None if act is _command_demo_users else request.getfixturevalue("second_admin")
    if hasattr(act, "before"):
        act.before()
    before = AuditEntry.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
    act(client, personas, someone, second_admin)
    entries = AuditEntry.objects.filter(seq__gt=before, action=action)
    if target is not None:
        entries = entries.filter(target_id=target)
    assert entries.exists(), list(
        AuditEntry.objects.filter(seq__gt=before).values_list("actor", "action", "target_id")
    )
    assert {e.actor for e in entries} == {actor}


def test_a_token_used_past_its_expiry_is_recorded_as_expired(client, personas):
    from datetime import timedelta

    from django.utils import timezone

    token, clear = token_create(actor=personas["admin"], user=personas["application"], name="x")
    ApiToken.objects.filter(pk=token.pk).update(expiry=timezone.now() - timedelta(seconds=1))
    response = client.get("/api/v1/poison-list", HTTP_AUTHORIZATION=f"Token {clear}")
    assert response.status_code == 401
    assert AuditEntry.objects.filter(action="token.expired", target_id="application").exists()
