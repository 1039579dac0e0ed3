"""Asking for a purge or a preview (R15): checked, recorded, audited. Running it is
console.retention.execution's, on the spark worker (or in the foreground, `purge_run`)."""

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from console.audit.services import audit_record
from console.permissions import RUN_PURGES
from console.queues.models import Queue
from console.retention.models import PurgeRun


class PurgeBusy(Exception):
    """A purge is already queued or running: two would rewrite the same commits."""


def _name(actor):
    return getattr(actor, "get_username", lambda: str(actor or "system"))() or "system"


def purge_create(*, actor, dry_run=False, queue="", enqueue=None):
    """Record a purge (or, `dry_run`, a preview) of every queue or of `queue`. `enqueue(id)` is
    called once the transaction commits, for a worker to run it (the sweeper asks again if that
    task is lost); without it, the caller runs it (console.retention.execution.purge_run). A
    person needs RUN_PURGES; "system" and the command line are trusted.

    Raises PermissionDenied, ValidationError (an unknown queue), or PurgeBusy."""
    if hasattr(actor, "has_perm") and not actor.has_perm(RUN_PURGES):
        raise PermissionDenied("you may not run purges")
    queue = queue or ""
    if queue and not Queue.objects.filter(name=queue).exists():
        raise ValidationError(f"there is no queue {queue!r}")
    try:
        with transaction.atomic():
            purge = PurgeRun.objects.create(
                requested_by=_name(actor)[:150],
                dry_run=dry_run,
                queue=queue,
                # Handed over now (to a worker, or run in the foreground by the caller): the
                # sweeper waits a while before it hands the purge over again.
                enqueued_at=timezone.now(),
            )
            if hasattr(actor, "has_perm"):
                # A person's request; the scheduler's and the command's are audited by their
                # outcome alone.
                audit_record(
                    actor=actor,
                    action="retention.requested",
                    target_type="purge",
                    target_id=purge.id,
                    details={"dry_run": dry_run, "queue": queue},
                )
            if enqueue is not None:
                transaction.on_commit(lambda: enqueue(purge.id), robust=True)
    except IntegrityError:
        raise PurgeBusy("a purge is queued or running; try again when it has ended") from None
    return purge
