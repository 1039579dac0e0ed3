"""Beat checkpoints the audit chain's head when it moved, in the database and as a signed file."""

import pytest

from console.audit.models import AuditCheckpoint
from console.audit.selectors import audit_verify
from console.audit.services import audit_record
from console.audit.tasks import audit_checkpoint_task

pytestmark = pytest.mark.django_db


def test_the_task_checkpoints_a_moved_head_once_and_files_it(settings):
    assert audit_checkpoint_task() is None  # an empty trail
    audit_record(actor="alice", action="login")
    audit_record(actor="alice", action="logout")
    assert audit_checkpoint_task() == 2
    assert audit_checkpoint_task() is None  # nothing new since
    assert list(AuditCheckpoint.objects.values_list("seq", flat=True)) == [2]
    assert len(list(settings.AUDIT_CHECKPOINT_DIR.iterdir())) == 1
    assert audit_verify().ok
