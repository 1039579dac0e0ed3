"""Every change to who may do what is in the audit trail, whatever the route: the console's role
grants, the Django admin, the API and a command, each with the person (or the server account)
who made it."""

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command
from django.utils import timezone

from console.access.rights import approver_cooldown_until
from console.audit.models import AuditEntry

pytestmark = pytest.mark.django_db


def _entries(action, target_id=None):
    qs = AuditEntry.objects.filter(action=action)
    if target_id is not None:
        qs = qs.filter(target_id=target_id)
    return list(qs.order_by("seq"))


def _admin_post(client, url, data):
    response = client.post(url, data)
    assert response.status_code in (200, 302), response.content[:2000]
    return response


def _user_form(user, **changes):
    """The Django admin's user change form, as the browser would post it."""
    data = {
        "username": user.username,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "is_active": "on" if user.is_active else "",
        "is_staff": "on" if user.is_staff else "",
        "groups": [str(g.pk) for g in user.groups.all()],
        "last_login_0": "",
        "last_login_1": "",
        "date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v != ""}


def test_a_user_created_in_the_django_admin_is_recorded_with_the_admin_as_actor(client, personas):
    client.force_login(personas["admin"])
    _admin_post(
        client,
        "/admin/auth/user/add/",
        {
            "username": "carol",
            "usable_password": "true",
            "password1": "Xq7-long-pass!",
            "password2": "Xq7-long-pass!",
        },
    )
    [created] = _entries("user.created", "carol")
    assert created.actor == "admin"
    assert created.details["is_superuser"] is False


def test_a_role_given_and_taken_in_the_django_admin_is_recorded_before_and_after(
    client, personas, newcomer, second_admin
):
    from console.access.models import RoleGrant

    client.force_login(personas["admin"])
    viewer = Group.objects.get(name="viewer")
    _admin_post(
        client, f"/admin/auth/user/{newcomer.pk}/change/", _user_form(newcomer, groups=[viewer.pk])
    )
    # It grows the newcomer's rights: it waits for the second administrator (R19).
    [asked] = _entries("role_grant.requested")
    assert asked.actor == "admin" and asked.details["role"] == "viewer"
    assert not _entries("user.roles_changed", "newcomer")
    client.force_login(second_admin)
    client.post(f"/role-grants/{RoleGrant.objects.get().id}/confirm")
    [given] = _entries("user.roles_changed", "newcomer")
    assert given.actor == "admin2"
    assert given.details == {"before": [], "after": ["viewer"], "added": ["viewer"], "removed": []}
    client.force_login(personas["admin"])
    newcomer.refresh_from_db()
    _admin_post(client, f"/admin/auth/user/{newcomer.pk}/change/", _user_form(newcomer, groups=[]))
    taken = _entries("user.roles_changed", "newcomer")[-1]
    assert taken.details["removed"] == ["viewer"] and taken.details["after"] == []


def test_a_deactivation_and_a_deletion_are_recorded(client, personas, newcomer):
    client.force_login(personas["admin"])
    _admin_post(
        client, f"/admin/auth/user/{newcomer.pk}/change/", _user_form(newcomer, is_active="")
    )
    [deactivated] = _entries("user.deactivated", "newcomer")
    assert deactivated.actor == "admin"
    assert deactivated.details["changes"]["is_active"] == {"before": True, "after": False}
    _admin_post(client, f"/admin/auth/user/{newcomer.pk}/delete/", {"post": "yes"})
    [deleted] = _entries("user.deleted", "newcomer")
    assert deleted.actor == "admin"
    assert not User.objects.filter(username="newcomer").exists()


def test_a_password_set_by_someone_else_is_recorded_and_restarts_the_cool_down(client, personas):
    client.force_login(personas["admin"])
    target = personas["approver"]
    _admin_post(
        client,
        f"/admin/auth/user/{target.pk}/password/",
        {
            "usable_password": "true",
            "password1": "Zz9-another-pass",
            "password2": "Zz9-another-pass",
        },
    )
    [entry] = _entries("user.password_set", "approver")
    assert entry.actor == "admin"
    assert "password" not in str(entry.details).lower() or entry.details == {}
    assert approver_cooldown_until(User.objects.get(pk=target.pk)) > timezone.now()


def test_a_password_changed_by_its_owner_is_recorded_as_theirs(client, personas):
    viewer = personas["viewer"]
    client.force_login(viewer)
    viewer.set_password("Brand-new-pass-42")
    # Django's own form for it is the admin's (staff only); the model write is what is audited.
    from console.access.actor import _request

    class _Req:
        user = viewer

    token = _request.set(_Req())
    try:
        viewer.save()
    finally:
        _request.reset(token)
    [entry] = _entries("user.password_changed", "viewer")
    assert entry.actor == "viewer"


def test_a_login_is_not_recorded_as_a_change_of_the_user(client, personas):
    before = AuditEntry.objects.filter(action__startswith="user.").count()
    assert client.login(username="viewer", password="pw-viewer-1234")
    assert AuditEntry.objects.filter(action__startswith="user.").count() == before


def test_a_command_records_the_server_account_that_ran_it(personas):
    call_command("create_demo_users", stdout=open("/dev/null", "w"))  # noqa: SIM115
    entries = AuditEntry.objects.filter(action="user.password_set", target_id="viewer")
    assert entries.exists()
    assert all(e.actor.startswith(("cli:", "system")) for e in entries)


def test_a_role_whose_permissions_change_is_recorded(personas):
    viewer = Group.objects.get(name="viewer")
    permission = Permission.objects.get(codename="view_auditentry")
    viewer.permissions.add(permission)
    entry = _entries("role.permissions_changed", "viewer")[-1]
    assert entry.details["added"] == ["audit.view_auditentry"]
    assert "audit.view_auditentry" not in entry.details["before"]
    viewer.permissions.remove(permission)
    assert _entries("role.permissions_changed", "viewer")[-1].details["removed"] == [
        "audit.view_auditentry"
    ]


def test_a_password_hash_upgraded_at_login_is_not_a_change_of_rights(client, personas, settings):
    """Django re-hashes a password with a stronger hasher as it checks it: the same password,
    not someone setting one, and no restart of the cool-down."""
    from console.access.models import AccountRights

    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
        "django.contrib.auth.hashers.MD5PasswordHasher",
    ]
    before = AccountRights.objects.get(user_id=personas["approver"].pk).changed_at
    assert client.login(username="approver", password="pw-approver-1234")
    assert User.objects.get(pk=personas["approver"].pk).password.startswith("pbkdf2_")
    assert not AuditEntry.objects.filter(action__startswith="user.password").exists()
    assert AccountRights.objects.get(user_id=personas["approver"].pk).changed_at == before
