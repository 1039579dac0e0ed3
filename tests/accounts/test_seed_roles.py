"""The six roles and `manage.py seed_roles`."""

from io import StringIO

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.management import call_command

from console.accounts.roles import ROLE_PERMISSIONS, ROLES, roles_seed

pytestmark = pytest.mark.django_db

VIEW = {
    "queues.view_queue",
    "delivery.view_deliveryrun",
    "delivery.view_poisonentry",
    "ingest.view_messagekey",
    "readmodels.view_messageindex",
    "readmodels.view_failuregroup",
    "readmodels.view_queuestat",
    "readmodels.view_quarantineinflow",
    "decisions.view_actionrequest",
    "lakequery.view_lakequery",
    "notes.view_note",
    # The standing rules, and what each did.
    "rules.view_standingrule",
}
# Not the sending of messages (R19): a person sends by hand only into a queue two administrators
# agreed to (console.access.IngestRight).
OPERATE = VIEW | {
    "readmodels.view_body",
    "decisions.add_actionrequest",
    "lakequery.add_lakequery",
    "notes.add_note",
    "notes.change_investigation",
}
# Standing rules are proposed and approved (by someone else) by approvers and administrators.
RULES = {"rules.add_standingrule", "rules.approve_standingrule"}
APPROVE = OPERATE | {"decisions.approve_actionrequest", "notes.reassign_investigation"} | RULES


def _permissions(role):
    group = Group.objects.get(name=role)
    return {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}


def test_it_creates_the_six_role_groups():
    call_command("seed_roles", stdout=StringIO())

    assert set(Group.objects.values_list("name", flat=True)) == {
        "viewer",
        "operator",
        "approver",
        "admin",
        "auditor",
        "application",
    }


def test_each_role_gets_exactly_its_permissions():
    roles_seed()

    assert _permissions("viewer") == VIEW
    assert _permissions("operator") == OPERATE
    assert _permissions("approver") == APPROVE
    # Admins see metadata and manage queues and users; bodies are not theirs to read.
    assert (
        _permissions("admin")
        == VIEW
        | {
            "queues.add_queue",
            "queues.change_queue",
            "queues.delete_queue",
            "auth.view_user",
            "auth.add_user",
            "auth.change_user",
            "auth.delete_user",
            "lakequery.add_lakequery",
            "lakequery.change_lakequery",
            "delivery.delete_poisonentry",
            "retention.view_purgerun",
            "retention.add_purgerun",
            # The alerts' outbox, webhooks and inflow thresholds.
            "alerts.change_webhook",
            # Every background run: the runs page and /api/v1/runs.
            "lake.view_runs",
        }
        | RULES
    )
    assert _permissions("auditor") == {
        "audit.view_auditentry",
        "audit.export_auditentry",
        # A checkpoint of the chain now, from the audit page.
        "audit.add_auditcheckpoint",
        "decisions.view_actionrequest",
        "retention.view_purgerun",
        "notes.view_note",
        "rules.view_standingrule",
    }
    # An outside application sends messages in, reads the poison list and reports to it;
    # nothing else.
    assert _permissions("application") == {
        "ingest.add_messagekey",
        "delivery.view_poisonentry",
        "delivery.add_poisonentry",
    }


def test_running_it_twice_changes_nothing():
    roles_seed()
    before = {role: _permissions(role) for role in ROLES}

    result = roles_seed()

    assert {role: _permissions(role) for role in ROLES} == before
    assert Group.objects.count() == 6
    assert not any(created for created, _ in result.values())


def test_it_takes_back_a_permission_given_by_hand():
    roles_seed()
    Group.objects.get(name="viewer").permissions.add(
        Permission.objects.get(codename="delete_queue")
    )

    roles_seed()

    assert _permissions("viewer") == VIEW


def test_every_permission_of_the_mapping_exists():
    for role in ROLES:
        for name in ROLE_PERMISSIONS[role]:
            app_label, codename = name.split(".")
            assert Permission.objects.filter(
                content_type__app_label=app_label, codename=codename
            ).exists(), name


def test_a_user_in_a_group_has_the_roles_permissions():
    roles_seed()
    operator = User.objects.create_user("olivia")
    operator.groups.add(Group.objects.get(name="operator"))

    assert operator.has_perm("readmodels.view_body")
    assert not operator.has_perm("ingest.add_messagekey")
    assert operator.has_perm("queues.view_queue")
    assert not operator.has_perm("queues.change_queue")


def test_the_command_reports_each_role():
    out = StringIO()
    call_command("seed_roles", stdout=out)

    assert "viewer    created    12 permission(s)" in out.getvalue()
    assert "auditor   created    7 permission(s)" in out.getvalue()
    assert "application created    3 permission(s)" in out.getvalue()
