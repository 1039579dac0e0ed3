"""Nobody raises their own rights, and a role that grows someone's rights waits for a second
administrator (R19): in the console, the Django admin and the API."""

import pytest
from django.contrib.auth.models import Group, User
from django.db import transaction

from console.access.models import RoleGrant
from console.audit.models import AuditEntry

pytestmark = pytest.mark.django_db


def _roles(user):
    return sorted(User.objects.get(pk=user.pk).groups.values_list("name", flat=True))


def test_an_admin_cannot_add_roles_to_itself_in_the_django_admin(client, personas):
    admin = personas["admin"]
    client.force_login(admin)
    operator, approver = Group.objects.get(name="operator"), Group.objects.get(name="approver")
    groups = [g.pk for g in admin.groups.all()] + [operator.pk, approver.pk]
    response = client.post(
        f"/admin/auth/user/{admin.pk}/change/",
        {
            "username": "admin",
            "is_active": "on",
            "is_staff": "on",
            "groups": groups,
            "date_joined_0": admin.date_joined.strftime("%Y-%m-%d"),
            "date_joined_1": admin.date_joined.strftime("%H:%M:%S"),
        },
    )
    assert response.status_code in (200, 302)
    assert _roles(admin) == ["admin"]
    assert not AuditEntry.objects.filter(
        action="user.roles_changed", target_id="admin", actor="admin"
    ).exists()


def test_an_admin_cannot_add_roles_to_itself_through_the_console_or_the_api(client, personas):
    admin = personas["admin"]
    client.force_login(admin)
    response = client.post("/role-grants/", {"user": "admin", "role": "operator"})
    assert response.status_code == 400
    assert b"nobody changes their own roles" in response.content
    api = client.post(
        "/api/v1/role-grants",
        {"user": "admin", "role": "approver"},
        content_type="application/json",
    )
    assert api.status_code == 403
    assert "their own" in api.json()["detail"]
    assert _roles(admin) == ["admin"]


def test_the_approver_role_given_in_the_django_admin_waits_for_a_second_administrator(
    client, personas, newcomer, second_admin
):
    client.force_login(personas["admin"])
    approver = Group.objects.get(name="approver")
    client.post(
        f"/admin/auth/user/{newcomer.pk}/change/",
        {
            "username": "newcomer",
            "is_active": "on",
            "groups": [approver.pk],
            "date_joined_0": newcomer.date_joined.strftime("%Y-%m-%d"),
            "date_joined_1": newcomer.date_joined.strftime("%H:%M:%S"),
        },
    )
    assert _roles(newcomer) == []
    grant = RoleGrant.objects.get(user=newcomer)
    assert (grant.status, grant.role.name, grant.requested_by.username) == (
        "pending",
        "approver",
        "admin",
    )
    client.force_login(second_admin)
    response = client.post(f"/role-grants/{grant.id}/confirm", {"comment": "agreed"})
    assert response.status_code == 302
    assert _roles(newcomer) == ["approver"]
    [change] = AuditEntry.objects.filter(action="user.roles_changed", target_id="newcomer")
    assert change.actor == "admin2" and change.details["added"] == ["approver"]
    [confirmed] = AuditEntry.objects.filter(action="role_grant.confirmed")
    assert confirmed.actor == "admin2" and confirmed.details["requested_by"] == "admin"


def test_the_one_who_asked_and_the_one_who_receives_cannot_confirm(client, personas, second_admin):
    from console.access.services import role_grant_request

    operator = personas["operator"]
    grant = role_grant_request(
        actor=personas["admin"], user=operator, role=Group.objects.get(name="approver")
    )
    client.force_login(personas["admin"])
    assert client.post(f"/role-grants/{grant.id}/confirm").status_code == 403
    api = client.post(f"/api/v1/role-grants/{grant.id}/confirm", content_type="application/json")
    assert api.status_code == 403 and "four eyes" in api.json()["detail"]
    # A grant of the admin role to the second admin's own account, asked by the first admin.
    own = role_grant_request(
        actor=personas["admin"], user=second_admin, role=Group.objects.get(name="approver")
    )
    client.force_login(second_admin)
    assert client.post(f"/role-grants/{own.id}/confirm").status_code == 403
    assert _roles(operator) == ["operator"]
    assert client.post(f"/role-grants/{grant.id}/confirm").status_code == 302
    assert _roles(operator) == ["approver", "operator"]


def test_even_a_role_that_does_not_approve_waits_when_it_grows_rights(client, personas, newcomer):
    client.force_login(personas["admin"])
    response = client.post("/role-grants/", {"user": "newcomer", "role": "viewer"})
    grant = RoleGrant.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/role-grants/{grant.id}/"
    assert _roles(newcomer) == []
    assert (grant.status, grant.role.name) == ("pending", "viewer")


def test_a_role_that_adds_nothing_the_person_holds_not_already_is_given_at_once(client, personas):
    client.force_login(personas["admin"])
    response = client.post("/role-grants/", {"user": "operator", "role": "viewer"})
    assert response.status_code == 302
    assert _roles(personas["operator"]) == ["operator", "viewer"]
    assert not RoleGrant.objects.exists()


def test_a_grant_of_the_approve_right_through_the_api_waits_and_is_confirmed_there(
    client, personas, newcomer, second_admin
):
    client.force_login(personas["admin"])
    asked = client.post(
        "/api/v1/role-grants",
        {"user": "newcomer", "role": "approver", "comment": "joins the on-call rota"},
        content_type="application/json",
    )
    assert asked.status_code == 201, asked.content
    assert asked.json()["status"] == "pending"
    assert _roles(newcomer) == []
    client.force_login(second_admin)
    done = client.post(
        f"/api/v1/role-grants/{asked.json()['id']}/confirm", content_type="application/json"
    )
    assert done.status_code == 200 and done.json()["status"] == "confirmed"
    assert _roles(newcomer) == ["approver"]


def test_a_direct_write_of_a_role_that_approves_is_refused_while_serving_a_request(
    personas, newcomer
):
    """The signals hold whatever screen a future change adds."""
    from django.core.exceptions import PermissionDenied

    from console.access.actor import _request

    class _Req:
        user = personas["admin"]

    token = _request.set(_Req())
    try:
        with pytest.raises(PermissionDenied, match="second administrator"), transaction.atomic():
            newcomer.groups.add(Group.objects.get(name="approver"))
        with pytest.raises(PermissionDenied, match="own roles"), transaction.atomic():
            personas["admin"].groups.add(Group.objects.get(name="viewer"))
        with pytest.raises(PermissionDenied, match="superuser"), transaction.atomic():
            newcomer.is_superuser = True
            newcomer.save()
    finally:
        _request.reset(token)
    assert _roles(newcomer) == [] and _roles(personas["admin"]) == ["admin"]
    assert not User.objects.get(pk=newcomer.pk).is_superuser


def test_someone_without_the_admin_role_sees_no_role_grants(client, personas):
    for role in ("viewer", "operator", "approver", "auditor"):
        client.force_login(personas[role])
        assert client.get("/role-grants/").status_code == 403
        assert client.get("/api/v1/role-grants").status_code == 403


def test_a_rejection_says_why_and_gives_nothing(client, personas, newcomer, second_admin):
    from console.access.services import role_grant_request

    grant = role_grant_request(
        actor=personas["admin"], user=newcomer, role=Group.objects.get(name="approver")
    )
    client.force_login(second_admin)
    assert client.post(f"/role-grants/{grant.id}/reject", {"comment": ""}).status_code == 302
    assert RoleGrant.objects.get(pk=grant.pk).status == "pending"
    client.post(f"/role-grants/{grant.id}/reject", {"comment": "not on the rota"})
    assert RoleGrant.objects.get(pk=grant.pk).status == "rejected"
    assert _roles(newcomer) == []
    assert AuditEntry.objects.filter(action="role_grant.rejected", actor="admin2").exists()
