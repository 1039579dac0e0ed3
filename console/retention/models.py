"""Retention runs (R15): each purge of the final messages past their queue's retention, or a
preview of one, as a row that holds its state and a heartbeat like a lake query's (ARCHITECTURE:
tasks may be lost, work may not), and what it purged: how many per queue, the SHA-256 of the
purged ids, who or what ran it. The rows are never deleted: they and the audit trail are what
remains of the purged messages."""

from django.db import models
from django.db.models import Q

from console import leases


class PurgeRun(leases.LeasedRun):
    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    STATUSES = [(s, s) for s in (QUEUED, RUNNING, DONE, FAILED)]
    ACTIVE = (QUEUED, RUNNING)
    FINISHED = (DONE, FAILED)
    lease_by_beats = True

    # A username, "system" (the scheduler) or "manage.py purge": outlives the user, as the
    # audit trail's actor does.
    requested_by = models.CharField(max_length=150)
    dry_run = models.BooleanField(default=False)
    queue = models.CharField(max_length=100, blank=True, default="")  # "": every queue
    status = leases.status_field(STATUSES, default=QUEUED)
    lock = models.CharField(max_length=20, default="purge", editable=False)
    # The clock the run purged by: a message is purged if it became final before
    # now - retention_days of its queue.
    now = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)  # last handed to the broker
    attempts = models.PositiveIntegerField(default=0)  # claims so far
    work_dir = models.CharField(max_length=500, blank=True, default="")  # the attempt's scratch
    # What it purged (or, for a dry run, would purge): queue -> {"count", "sha256"}.
    counts = models.JSONField(default=dict)
    total = models.BigIntegerField(default=0)
    ids_sha256 = models.CharField(max_length=64, blank=True, default="")
    # Lake directory of the purged ids (Parquet: message_id, queue, state; sorted by id).
    ids_path = models.CharField(max_length=500, blank=True, default="")
    events_upto = models.BigIntegerField(null=True, blank=True)  # last events commit read
    messages_upto = models.BigIntegerField(null=True, blank=True)  # last messages commit read
    # The lake commits it rewrote or retired: {"events": {"rewritten": n, "retired": n}, ...}.
    lake_changes = models.JSONField(default=dict)
    # Directories no reader is shown any more, deleted once PURGE_GRACE_SECONDS have passed
    # (a delivery run or a query that listed them before the swap may still be reading them).
    pending_dirs = models.JSONField(default=list)
    dirs_deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            # One purge at a time: two would rewrite the same commits. Previews change nothing
            # and may run beside one.
            models.UniqueConstraint(
                fields=["lock"],
                condition=Q(status__in=("queued", "running"), dry_run=False),
                name="one_active_purge",
            )
        ]
        indexes = [models.Index(fields=["status", "id"], name="ix_purge_status")]

    def __str__(self):
        kind = "preview" if self.dry_run else "purge"
        return f"{kind} {self.id} ({self.status})"

    @property
    def final(self):
        return self.status in (self.DONE, self.FAILED)

    def described(self):
        """What the Runs page shows of it (console.leases.RunKind.describe)."""
        queues = [self.queue] if self.queue else []
        where = f" in {', '.join(queues)}" if queues else ""
        if self.events_upto is None:
            position = f"not read yet{where}"
        else:
            position = f"events up to commit {self.events_upto}{where}"
        verb = "would be purged" if self.dry_run else "purged"
        return {
            "variant": "preview" if self.dry_run else "purge",
            "upto_commit": self.events_upto,
            "queues": queues,
            "purged": self.total,
            "created_at": self.created_at,
            "position": position,
            "did": f"{self.total} {verb}" if self.status == self.DONE else "",
        }


leases.register("purge", PurgeRun, title="purge", order=4)
