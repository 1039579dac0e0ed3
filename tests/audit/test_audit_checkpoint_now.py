"""The audit page's "Take a checkpoint now": a button for those allowed (auditors), no command
line on the page, a 403 on the server for everyone else, and the trail saying who took it."""

import json

import pytest
from django.urls import reverse

from console.audit.checkpoints import checkpoint_dir
from console.audit.models import AuditCheckpoint, AuditEntry
from tests.browse.conftest import login

ROLES = ("viewer", "operator", "approver", "admin", "application", "outsider")


def test_an_auditor_takes_a_checkpoint_from_the_page(personas, record):
    record("login", actor="alice")

    response = login(personas["auditor"]).post(
        reverse("audit-checkpoint"), {"next": reverse("audit-list")}
    )

    assert response.status_code == 302 and response["Location"] == reverse("audit-list")
    taken = AuditEntry.objects.get(action="audit.checkpoint_taken")
    assert taken.actor == "auditor" and taken.details == {"via": "page"}
    # The checkpoint covers the very entry that says who took it, in the database and on file.
    checkpoint = AuditCheckpoint.objects.get()
    assert (checkpoint.seq, checkpoint.hash) == (taken.seq, taken.hash)
    (filed,) = checkpoint_dir().glob("checkpoint-*.json")
    assert json.loads(filed.read_text())["seq"] == taken.seq


def test_the_page_says_the_checkpoint_is_taken(personas, record):
    record("login", actor="alice")

    response = login(personas["auditor"]).post(reverse("audit-checkpoint"), follow=True)

    html = response.content.decode()
    assert "Checkpoint #" in html and "taken" in html
    assert "checkpoint holds" in html


@pytest.mark.parametrize("role", ROLES)
def test_any_other_role_is_refused_on_the_server(personas, record, role):
    record("login", actor="alice")

    response = login(personas[role]).post(reverse("audit-checkpoint"))

    assert response.status_code == 403
    assert not AuditCheckpoint.objects.exists()
    assert not AuditEntry.objects.filter(action="audit.checkpoint_taken").exists()


def test_it_takes_a_post(personas):
    response = login(personas["auditor"]).get(reverse("audit-checkpoint"))

    assert response.status_code == 405
    assert not AuditCheckpoint.objects.exists()


def test_the_page_offers_the_button_and_no_command_line(personas, record):
    record("login", actor="alice")

    html = login(personas["auditor"]).get(reverse("audit-list")).content.decode()

    assert 'id="audit-checkpoint-submit"' in html
    assert "manage.py" not in html
    assert "No checkpoint yet; the workers take one every 1 h 0 min" in html


def test_an_auditor_without_the_permission_sees_no_button(personas, record):
    from django.contrib.auth.models import Group, Permission

    Group.objects.get(name="auditor").permissions.remove(
        Permission.objects.get(codename="add_auditcheckpoint")
    )
    record("login", actor="alice")

    html = login(personas["auditor"]).get(reverse("audit-list")).content.decode()

    assert 'id="audit-checkpoint-submit"' not in html
    assert "manage.py" not in html
