"""`manage.py seed_demo`: everything a demo needs, through the real ingest path, idempotent."""

from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command

from console.ingest.models import MessageKey
from console.lake.models import LakeCommit
from console.queues.models import Queue
from workers.demo.data import QUEUES_FILE, demo_file_write, demo_message_ids

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("demo_dirs")]

ORDERS = 40  # a small set: the full one is the same code with more orders


def _seed():
    out = StringIO()
    call_command("seed_demo", "--orders", str(ORDERS), stdout=out)
    return out.getvalue()


def test_it_seeds_roles_users_queues_and_the_demo_messages():
    output = _seed()

    ids = demo_message_ids(orders=ORDERS)
    assert Group.objects.count() == 6
    # One per role, and a second administrator to confirm the first one's role grants.
    assert sorted(User.objects.values_list("username", flat=True)) == sorted(
        ["viewer", "operator", "approver", "admin", "auditor", "application", "admin2"]
    )
    assert Queue.objects.count() == 5
    assert set(MessageKey.objects.values_list("message_id", flat=True)) == set(ids)
    assert f"{len(ids)} accepted, 0 already there, 0 refused" in output
    assert "Demo ready." in output


def test_it_prints_a_password_for_every_demo_user():
    output = _seed()

    for role in ("viewer", "operator", "approver", "admin", "auditor", "application"):
        assert any(line.split()[:2] == [role, role] for line in output.splitlines() if line)
    assert any(line.split()[:2] == ["admin2", "admin"] for line in output.splitlines() if line)


def test_running_it_again_adds_nothing():
    _seed()
    keys, commits = MessageKey.objects.count(), LakeCommit.objects.count()

    output = _seed()

    assert "already ingested; nothing to do" in output
    assert "5 unchanged" in output
    assert (MessageKey.objects.count(), LakeCommit.objects.count()) == (keys, commits)
    assert User.objects.count() == 7


def test_a_partly_ingested_set_is_completed_without_duplicates(settings, tmp_path):
    from console.ingest.services import ingest_file

    call_command("load_queues", str(QUEUES_FILE), stdout=StringIO())
    path = tmp_path / "first.jsonl"
    demo_file_write(path, orders=ORDERS)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:10]), encoding="utf-8")
    assert ingest_file(path=path, source="test").accepted == 10

    output = _seed()

    total = len(demo_message_ids(orders=ORDERS))
    assert f"{total - 10} accepted, 10 already there, 0 refused" in output
    assert MessageKey.objects.count() == total
