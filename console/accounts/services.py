"""Writes to users and roles."""

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from console.accounts.roles import ADMIN, ROLES, roles_seed


@dataclass(frozen=True)
class DemoUser:
    username: str
    role: str
    password: str
    created: bool


def demo_users_create():
    """One user per role, named after it, with a fresh random password each time.

    Idempotent in what it creates: an existing demo user keeps its account and gets a new password
    (the old one was printed once and may be lost). Only the admin user is staff, so only it can
    open the Django admin; it is not a superuser: its group says what it may do there.
    """
    roles_seed()
    User = get_user_model()
    users = []
    with transaction.atomic():
        for role in ROLES:
            password = secrets.token_urlsafe(12)
            user, created = User.objects.get_or_create(username=role)
            user.set_password(password)
            user.is_active = True
            user.is_staff = role == ADMIN
            user.is_superuser = False
            user.save()
            user.groups.set([Group.objects.get(name=role)])
            users.append(DemoUser(username=role, role=role, password=password, created=created))
    return users
