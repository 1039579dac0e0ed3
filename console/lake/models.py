from django.db import models

from console import leases


class Epoch(models.Model):
    """A number for one writer of lake events. Events carry it, and the latest event of a message
    is its current state, so writers that started later win ties with those that started earlier."""

    purpose = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"epoch {self.id}: {self.purpose}"


class LakeCommit(models.Model):
    """One directory of lake output that readers may see. A directory with no row here does not
    exist as far as any reader is concerned (ARCHITECTURE: lake commits)."""

    DATASETS = [(d, d) for d in ("messages", "events", "state", "open", "notifications", "history")]

    dataset = models.CharField(max_length=32, choices=DATASETS)
    path = models.CharField(max_length=500, unique=True)
    row_count = models.BigIntegerField()
    idempotency_key = models.CharField(max_length=300)
    epoch = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Compaction folds commits into a new one and retires them in the same transaction.
    retired = models.BooleanField(default=False)
    # When compaction or a purge retired it: a history generation's directory is deleted a grace
    # period later (a reader that listed it just before may still be reading it).
    retired_at = models.DateTimeField(null=True, blank=True)
    # For a state or open snapshot or a history generation: the id of the last events commit
    # folded in.
    covers_upto = models.BigIntegerField(null=True, blank=True)
    # For a history generation: how many bucket files its events are spread over, by a hash of
    # the message id (workers.lake.history); the file that holds a message is computed from it.
    buckets = models.PositiveIntegerField(null=True, blank=True)
    # The writer brought the console's read models up to date with this commit itself, in the
    # same transaction (a decision chunk): the refresh has no need to fold it again.
    views_applied = models.BooleanField(default=False)
    # A refresh that loaded rows computed from the lake as it was before this commit (whose
    # writer had applied it) handed it back to be folded (views_applied off): until a refresh
    # takes it in, the read models may hold its changes for some of its messages and not for
    # others (console.readmodels.execution._applied_meanwhile_refold).
    handed_back = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "idempotency_key"], name="lake_commit_once_per_key"
            )
        ]
        indexes = [models.Index(fields=["dataset", "retired", "id"])]

    def __str__(self):
        return f"{self.dataset}:{self.path} ({self.row_count} rows)"


class LakeRewrite(models.Model):
    """A rewrite of committed directories under way (a purge's, R15). The compactions leave the
    lake alone while one holds: a snapshot or history generation committed meanwhile would make
    the rewrite's swap fail (console.lake.services.LakeChanged), and a purge takes many minutes
    at millions of messages. `until` bounds the wait if the rewriter dies without letting go."""

    holder = models.CharField(max_length=100, unique=True)
    until = models.DateTimeField()

    def __str__(self):
        return f"{self.holder} until {self.until:%Y-%m-%d %H:%M:%S}"


class CompactionRun(leases.LeasedRun):
    """One compaction that was due: a state snapshot (with its open snapshot) or a history
    generation folded from the events commits, from the moment it starts folding to its commit.
    Compactions run inside other tasks (after a delivery run, lake_compact_task) and change no
    other row while they fold, so this row and its heartbeat are the only trace of one under way:
    the runs page (console.runs) shows it beside delivery runs, refreshes and purges.

    Nothing claims a compaction again: one whose heartbeat stopped for LEASE_SECONDS is stale
    (`lake_compactions_stale_fail`), its directory never committed, and the next one due folds
    the same commits. A compaction that finds the lake changed under it when it commits is
    "skipped": the next one folds the lake as it is then."""

    STATE, HISTORY = "state", "history"
    KINDS = [(k, k) for k in (STATE, HISTORY)]
    RUNNING, COMMITTED, SKIPPED, FAILED = "running", "committed", "skipped", "failed"
    STATUSES = [(s, s) for s in (RUNNING, COMMITTED, SKIPPED, FAILED)]
    FINISHED = (COMMITTED, SKIPPED, FAILED)

    kind = models.CharField(max_length=12, choices=KINDS)
    status = leases.status_field(STATUSES)
    # Its position: the last events commit it folds in (its snapshot or generation's covers_upto).
    covers_upto = models.BigIntegerField(null=True, blank=True)
    commits = models.IntegerField(default=0)  # events commits folded in
    rows = models.BigIntegerField(null=True, blank=True)  # rows of what it wrote
    lake_commit = models.BigIntegerField(null=True, blank=True)  # the LakeCommit it made
    # Why a compaction was skipped; an error for one that failed (its exception, or a lapsed
    # heartbeat).
    note = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "id"], name="ix_compaction_status")]
        # Who may see every background run (delivery runs, refreshes, compactions, purges): the
        # runs page and /api/v1/runs. It lives here, the lowest app that holds a run.
        permissions = [("view_runs", "Can see the background runs and their heartbeats")]

    def __str__(self):
        return f"{self.kind} compaction {self.id} ({self.status})"

    def described(self):
        """What the Runs page shows of it (console.leases.RunKind.describe)."""
        upto = "the start" if self.covers_upto is None else str(self.covers_upto)
        did = [f"{self.rows} rows"] if self.rows is not None else []
        return {
            "variant": self.kind,
            "upto_commit": self.covers_upto,
            "rows": self.rows,
            "note": self.note,
            "position": f"covers up to events commit {upto}",
            "did": "; ".join([*did, *([self.note] if self.note else [])]),
        }


leases.register("compaction", CompactionRun, title="compaction", order=3)
