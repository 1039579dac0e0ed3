"""The audit trail's Celery task: a checkpoint of the chain's head, on the default worker."""

from console.audit.models import AuditCheckpoint, AuditEntry
from console.audit.services import audit_checkpoint
from console.audit.watch import audit_verify_watched
from console.celery_task import console_task


@console_task("workers.tasks.audit_checkpoint_task")
def audit_checkpoint_task():
    """Checkpoint the head (in the database and as a signed file outside it) when it moved
    since the last checkpoint: entries cut off the end after it are caught by audit_verify.
    Returns the checkpoint's sequence number, or None when there was nothing new."""
    head = AuditEntry.objects.order_by("-seq").values_list("seq", flat=True).first()
    last = AuditCheckpoint.objects.order_by("-seq").values_list("seq", flat=True).first()
    if head is None or head == last:
        return None
    return audit_checkpoint().seq


@console_task("workers.tasks.audit_verify_task")
def audit_verify_task():
    """Walk the whole chain (AUDIT_VERIFY_SECONDS apart): a broken one alerts the auditors.
    Returns whether it was intact."""
    return audit_verify_watched().ok
