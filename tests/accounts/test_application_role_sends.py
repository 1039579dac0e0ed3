"""The application role sends messages (a producer's service account): the roles' seed gives it
the permission, and installs seeded before get it from migration accounts 0004, which runs the
seed again, recorded in the audit trail like any change to what a role holds."""

import importlib

import pytest
from django.contrib.auth.models import Group, Permission

from console.accounts.roles import APPLICATION, ROLE_PERMISSIONS, roles_seed
from console.audit.models import AuditEntry
from console.permissions import INGEST_MESSAGES

pytestmark = pytest.mark.django_db

migration = importlib.import_module("console.accounts.migrations.0004_application_sends_messages")


def _held(role):
    group = Group.objects.get(name=role)
    return {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}


def _as_before_the_change():
    """An install seeded before: its application role reads and reports to the poison list."""
    roles_seed()
    send = Permission.objects.get(content_type__app_label="ingest", codename="add_messagekey")
    Group.objects.get(name=APPLICATION).permissions.remove(send)


def test_the_role_holds_the_permission_to_send():
    roles_seed()

    assert INGEST_MESSAGES in ROLE_PERMISSIONS[APPLICATION]
    assert INGEST_MESSAGES in _held(APPLICATION)


def test_the_migration_gives_it_to_an_install_seeded_before_and_the_trail_says_so():
    _as_before_the_change()
    start = AuditEntry.objects.order_by("-seq").values_list("seq", flat=True).first()

    migration._seed_again(None, None)

    assert INGEST_MESSAGES in _held(APPLICATION)
    entry = AuditEntry.objects.get(seq__gt=start, action="role.permissions_changed")
    assert entry.target_id == APPLICATION
    assert entry.details["added"] == [INGEST_MESSAGES]


def test_on_a_database_never_seeded_it_makes_no_role():
    migration._seed_again(None, None)

    assert not Group.objects.exists()


def test_when_the_seed_cannot_run_yet_it_still_gives_the_sending(monkeypatch):
    from console.accounts import roles

    _as_before_the_change()

    def missing():
        raise roles.RoleError("unknown permission(s): lake.view_new_thing")

    monkeypatch.setattr(roles, "roles_seed", missing)

    migration._seed_again(None, None)

    assert INGEST_MESSAGES in _held(APPLICATION)
