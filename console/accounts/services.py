"""Writes to users and roles."""

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from console.access.rights import approver_cooldown_waive
from console.accounts.roles import ADMIN, APPLICATION, ROLES, roles_seed

# One account per role, named after it, and a second administrator: a role that approves is
# granted by one administrator and confirmed by another (console.access).
DEMO_ACCOUNTS = [*((role, role) for role in ROLES), ("admin2", ADMIN)]


@dataclass(frozen=True)
class DemoUser:
    username: str
    role: str
    password: str | None  # None: a service account, which has none (it never signs in)
    created: bool


def demo_users_create():
    """One user per role, named after it, and a second administrator (DEMO_ACCOUNTS), with a
    fresh random password each time; past the approver cool-down, so that the demo can be tried
    at once (recorded as such). The application role's account is a service account: no password
    (it never signs in, R19); it calls the API with a token an administrator makes.

    Idempotent in what it creates: an existing demo user keeps its account and gets a new password
    (the old one was printed once and may be lost). Only the admin user is staff, so only it can
    open the Django admin; it is not a superuser: its group says what it may do there.
    """
    roles_seed()
    User = get_user_model()
    users = []
    with transaction.atomic():
        for username, role in DEMO_ACCOUNTS:
            password = None if role == APPLICATION else secrets.token_urlsafe(12)
            user, created = User.objects.get_or_create(username=username)
            user.set_password(password)  # None: an unusable one
            user.is_active = True
            user.is_staff = role == ADMIN
            user.is_superuser = False
            user.save()
            user.groups.set([Group.objects.get(name=role)])
            approver_cooldown_waive(user, reason="a demo account, to be tried at once")
            users.append(DemoUser(username=username, role=role, password=password, created=created))
    return users
