"""`manage.py create_demo_users`: one user per role, passwords printed once."""

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.management import call_command

pytestmark = pytest.mark.django_db

ROLES = ("viewer", "operator", "approver", "admin", "auditor", "application")


def _run():
    """The printed table as {username: password}."""
    out = StringIO()
    call_command("create_demo_users", stdout=out)
    passwords = {}
    for line in out.getvalue().splitlines():
        cells = line.split()
        if len(cells) > 2 and cells[0] in (*ROLES, "admin2"):
            passwords[cells[0]] = cells[2]
    return passwords


def test_it_makes_one_user_per_role_whose_printed_password_works():
    passwords = _run()

    assert sorted(passwords) == sorted([*ROLES, "admin2"])
    for username, password in passwords.items():
        if username == "application":
            continue
        user = authenticate(username=username, password=password)
        assert user is not None, username
        role = "admin" if username == "admin2" else username
        assert list(user.groups.values_list("name", flat=True)) == [role]


def test_the_application_account_is_a_service_account_without_a_password():
    from console.access.service_accounts import is_service_account

    passwords = _run()

    application = User.objects.get(username="application")
    assert passwords["application"] == "-"
    assert is_service_account(application)
    assert not application.has_usable_password()


def test_running_it_again_prints_fresh_passwords_and_keeps_one_user_per_role():
    first = _run()

    second = _run()

    assert User.objects.count() == 7
    for role in (r for r in ROLES if r != "application"):
        assert second[role] != first[role]
        assert authenticate(username=role, password=first[role]) is None
        assert authenticate(username=role, password=second[role]) is not None


def test_only_the_admin_user_is_staff_and_nobody_is_a_superuser():
    _run()

    staff = User.objects.filter(is_staff=True).order_by("username")
    assert list(staff.values_list("username", flat=True)) == ["admin", "admin2"]
    assert not User.objects.filter(is_superuser=True).exists()


def test_the_admin_user_may_change_queues_and_the_viewer_may_only_look():
    _run()
    admin, viewer = User.objects.get(username="admin"), User.objects.get(username="viewer")

    assert admin.has_perm("queues.change_queue")
    assert admin.has_perm("auth.add_user")
    assert viewer.has_perm("queues.view_queue")
    assert not viewer.has_perm("queues.change_queue")


def test_it_puts_back_a_demo_user_whose_role_was_changed_by_hand():
    _run()
    viewer = User.objects.get(username="viewer")
    viewer.is_superuser = True
    viewer.save()

    _run()

    viewer.refresh_from_db()
    assert not viewer.is_superuser
    assert list(viewer.groups.values_list("name", flat=True)) == ["viewer"]


def test_the_demo_accounts_may_approve_at_once_and_the_trail_says_why():
    from console.access.rights import approver_cooldown_check
    from console.audit.models import AuditEntry

    _run()

    approver_cooldown_check(User.objects.get(username="approver"))
    waived = AuditEntry.objects.filter(action="user.cooldown_waived", target_id="approver")
    assert waived.exists()
    assert waived.first().details == {"reason": "a demo account, to be tried at once"}
