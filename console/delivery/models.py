from django.db import models

from console import leases
from workers.engine.poison_feed import ADDED, BODY_CLEARED, REMOVED
from workers.engine.poison_feed import KINDS as CHANGE_KINDS


class DeliveryRun(leases.LeasedRun):
    """One pass of the delivery engine. Its heartbeat is its lease on the messages it claimed:
    when the heartbeat stops, the sweeper applies R7 to the claims (ARCHITECTURE: tasks may be
    lost, work may not)."""

    RUNNING = "running"
    COMMITTED = "committed"
    FAILED = "failed"  # the job raised; its claims were recovered by R7
    CRASHED = "crashed"  # its heartbeat stopped; the sweeper recovered its claims by R7
    STATUSES = [(s, s) for s in (RUNNING, COMMITTED, FAILED, CRASHED)]
    FINISHED = (COMMITTED, FAILED, CRASHED)

    epoch = models.BigIntegerField(unique=True)
    status = leases.status_field(STATUSES)
    queues = models.JSONField(default=list)  # the queues it holds (DeliveryLock) while running
    claims_path = models.CharField(max_length=500, blank=True, default="")
    claimed = models.BigIntegerField(default=0)
    outcomes = models.JSONField(default=dict)
    recovered = models.BooleanField(default=False)

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["status", "id"], name="ix_delivery_status"),
            # The metrics read the runs finished since their last fold (console.runs.totals), and
            # runs_forget those finished before its cutoff: neither reads the whole table.
            models.Index(fields=["finished_at"], name="ix_delivery_finished"),
        ]

    def __str__(self):
        return f"run {self.id} ({self.status})"

    def described(self):
        """What the Runs page shows of it (console.leases.RunKind.describe)."""
        states = (self.outcomes or {}).get("states") or {}
        claimed = f"; {self.claimed} claimed" if self.claimed is not None else ""
        return {
            "variant": "",
            "queues": list(self.queues or []),
            "claimed": self.claimed,
            "outcomes": {str(k): v for k, v in states.items()},
            "position": f"{', '.join(self.queues or []) or 'no queue'}{claimed}",
            "did": ", ".join(f"{state} {n}" for state, n in sorted(states.items())),
        }


leases.register("delivery", DeliveryRun, title="delivery run", order=1)


class DeliveryLock(models.Model):
    """A queue held by a running delivery run. Runs of different queues run at the same time
    (R16: a hanging handler on one queue never holds another back); two runs never hold one
    queue, so their claims can never overlap (a run claims only its queues' messages). The rows
    go in the transaction where their run leaves RUNNING."""

    queue = models.CharField(max_length=100, primary_key=True)
    run = models.ForeignKey(DeliveryRun, on_delete=models.CASCADE, related_name="locks")
    since = models.DateTimeField()
    # Asked for while held (new messages, a decision): what the run read before cannot include
    # them, so the queue gets its next run as soon as this one lets go.
    wanted = models.BooleanField(default=False)

    def __str__(self):
        return f"{self.queue} held by run {self.run_id}"


class DeliveryHandover(models.Model):
    """A free queue handed to a run task, asked for now (an ingest's wake, a run that let go of
    a wanted queue, a decision), whose run has not read the lake yet. That run will read after
    whatever asks for the queue meanwhile, so those asks hand it over no more: a burst of
    ingests queues one task, not one each. The run deletes the row just before it reads; from
    then on an ask hands the queue over again (or marks the run's lock wanted), so no message
    is left to beat's next tick. A row whose task was lost stops counting after
    DELIVERY_INTERVAL_SECONDS."""

    queue = models.CharField(max_length=100, primary_key=True)
    at = models.DateTimeField()

    def __str__(self):
        return f"{self.queue} handed over at {self.at}"


class PoisonEntry(models.Model):
    """The shared poison list (R9): every quarantined message's id, its reason and body hash.
    Applications outside the product may read it and report to it (the AMPS pattern), through
    /api/v1/poison-list. Every change to it is written to PoisonChange in the same transaction
    (console.delivery.poison); nothing else writes it."""

    message_id = models.CharField(max_length=200, unique=True)
    body_sha256 = models.CharField(max_length=64, blank=True, default="", db_index=True)
    queue = models.CharField(max_length=100, blank=True, default="")
    reason = models.TextField()
    # "engine", or the user name of whoever reported it (an outside application).
    source = models.CharField(max_length=150, default="engine")
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "poison entries"

    def __str__(self):
        return self.message_id


class PoisonChange(models.Model):
    """One change of the poison list. Its id is the cursor a consumer keeps: the changes after
    it are what the consumer has not seen. Writers of the list are serialized
    (console.delivery.poison), so the ids commit in order and a cursor never skips a change that
    commits late."""

    ADDED, REMOVED, BODY_CLEARED = ADDED, REMOVED, BODY_CLEARED
    KINDS = [(k, k.replace("_", " ")) for k in CHANGE_KINDS]

    kind = models.CharField(max_length=12, choices=KINDS)
    message_id = models.CharField(max_length=200)
    # added: the entry's hash; removed: the hash that went with it; body cleared: the hash that
    # no longer poisons.
    body_sha256 = models.CharField(max_length=64, blank=True, default="")
    queue = models.CharField(max_length=100, blank=True, default="")
    # added: the entry's reason; removed and body cleared: why.
    reason = models.TextField(blank=True, default="")
    # Who made the change: "engine", a user name, or "request <n>" (a reprocess).
    source = models.CharField(max_length=150, blank=True, default="")
    at = models.DateTimeField()

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return f"{self.id} {self.kind} {self.message_id}"
