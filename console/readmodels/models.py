"""The console's read models: what the screens show, kept current from the lake by the refresh
(console.readmodels.execution, the Spark job workers.jobs.refresh) and by the decisions' own
chunks (console.readmodels.deltas). The screens and the API (console.browse) read them, and never
the lake, except for one message's body and history on its detail page."""

from django.db import models, transaction
from django.db.models import Q
from django.template.defaultfilters import pluralize

from console import leases
from workers.engine.states import FLOW_QUARANTINED, NDLV, WAIT


class MessageState(models.Model):
    """What changes about an indexed message as it moves (a decision chunk, a delivery run's
    outcome, a refresh): one narrow row per index row, same message_id, with few indexes.

    Why apart from the rest: PostgreSQL rewrites a row in place (HOT) only when no indexed column
    changes, and a move changes state (and the count, the candidate flag), so every index of the
    table gets a new entry. A bulk decision updating 10,000 wide rows with a dozen indexes (text,
    trigram) cost seconds a chunk; these rows carry two or three (migration 0003 drops the
    pattern-matching copy of the primary key PostgreSQL would add: nothing matches ids here).
    MessageIndex inherits this model, so the ORM reads, filters and sorts both tables as one row."""

    message_id = models.CharField(max_length=200, primary_key=True)
    state = models.CharField(max_length=8)
    # R1: while DLNG, the delivery run that holds it ("" in every other state).
    run_id = models.CharField(max_length=64, blank=True, db_default="")
    delivery_count = models.IntegerField(default=0)
    candidate = models.BooleanField(default=False)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField()  # time of its latest event
    # A copy of MessageIndex.last_failure_at, which changes only with a refresh: the filters on
    # this table page by keyset on (their column, last failure, id), and an index holds the
    # columns of one table only. MessageIndex.save and every loader keep it equal.
    failure_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["state", "failure_at", "message_id"], name="ix_state_failure"),
            # Only the candidates: a reprocess clears the flag, and a row that leaves a partial
            # index's condition adds no entry to it (each index entry costs a bulk decision).
            models.Index(
                fields=["failure_at", "message_id"],
                condition=Q(candidate=True),
                name="ix_candidate_failure",
            ),
            models.Index(fields=["delivery_count", "message_id"], name="ix_delivery_count_id"),
        ]

    def __str__(self):
        return f"{self.message_id} {self.state}"


class MessageIndexQuerySet(models.QuerySet):
    """Writes that span both tables of the index, which Django does not do by itself for an
    inherited model."""

    def bulk_create(self, objs, batch_size=None, **kwargs):
        """Both tables' rows, in one transaction (Django refuses bulk_create for a model with a
        concrete parent). No conflict options: the index is bulk-loaded by the refresh in SQL."""
        if kwargs:
            raise TypeError(f"MessageIndex.bulk_create takes no {', '.join(kwargs)}")
        objs = list(objs)
        own = list(self.model._meta.local_concrete_fields)
        with transaction.atomic(using=self.db, savepoint=False):
            MessageState.objects.using(self.db).bulk_create(
                [o.state_copy() for o in objs], batch_size=batch_size
            )
            for o in objs:
                o.state_row_id = o.message_id
            self._batched_insert(objs, own, batch_size)
        for o in objs:
            o._state.adding, o._state.db = False, self.db
        return objs

    def update(self, **kwargs):
        # MessageState's copy of the last failure follows it (the state filters sort on it).
        if "last_failure_at" in kwargs:
            kwargs["failure_at"] = kwargs["last_failure_at"]
        return super().update(**kwargs)

    update.alters_data = True

    def delete(self):
        """The rows, then the state rows left without theirs: a statement each (Django's delete of
        an inherited model fetches every row first, a million of them for a bench's reset)."""
        with transaction.atomic(using=self.db, savepoint=False):
            base = MessageIndex._base_manager.using(self.db)
            if not self.query.where:
                gone = base.all()._raw_delete(self.db)
                MessageState._base_manager.using(self.db).all()._raw_delete(self.db)
                return gone, {self.model._meta.label: gone}
            gone = base.filter(pk__in=self.values("pk"))._raw_delete(self.db)
            MessageState._base_manager.using(self.db).filter(index_row__isnull=True)._raw_delete(
                self.db
            )
        return gone, {self.model._meta.label: gone}

    delete.alters_data = True


class MessageIndex(MessageState):
    """Every message that is not DLVD, and every DLVD one that ever failed: what the message
    browser lists. Its own table holds what changes rarely (a refresh rewrites it when a message
    fails again) and the text the browser filters on; MessageState, its parent, what moves."""

    # The parent's row, by the same message_id column (no constraint: both are bulk-loaded).
    state_row = models.OneToOneField(
        MessageState,
        on_delete=models.DO_NOTHING,
        parent_link=True,
        primary_key=True,
        db_column="message_id",
        db_constraint=False,
        related_name="index_row",
    )
    queue = models.CharField(max_length=100)
    original_queue = models.CharField(max_length=100)
    first_failure_at = models.DateTimeField(null=True, blank=True)
    last_failure_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True, default="")  # the latest failure's, shortened
    exception_type = models.CharField(max_length=200, blank=True, default="")
    # The failure group's fingerprint; not a foreign key so rows can be bulk-loaded in any order.
    group_id = models.CharField(max_length=64, blank=True, default="")
    sender = models.CharField(max_length=300, blank=True, default="")
    conversation_id = models.CharField(max_length=200, blank=True, default="")
    body_size = models.BigIntegerField(default=0)
    content_type = models.CharField(max_length=200, blank=True, default="")
    body_version = models.IntegerField(default=1)
    body_path = models.CharField(max_length=500)  # lake directory holding its current body
    enqueued_at = models.DateTimeField()

    objects = MessageIndexQuerySet.as_manager()

    class Meta:
        # The browser pages by keyset on (sort column, message_id); each filter has an index
        # that starts with it so no filter scans the table (state, candidate and the delivery
        # count: MessageState's).
        indexes = [
            models.Index(fields=["last_failure_at", "state_row"], name="ix_failure_id"),
            models.Index(fields=["queue", "last_failure_at", "state_row"], name="ix_queue"),
            models.Index(fields=["group_id", "last_failure_at", "state_row"], name="ix_group"),
            models.Index(fields=["exception_type", "last_failure_at"], name="ix_exception"),
            models.Index(fields=["sender", "last_failure_at"], name="ix_sender"),
            models.Index(fields=["conversation_id", "enqueued_at"], name="ix_conversation"),
            models.Index(fields=["enqueued_at", "state_row"], name="ix_enqueued"),
            models.Index(fields=["queue", "state_row"], name="ix_queue_id"),
        ]
        permissions = [("view_body", "Can read message bodies (they may hold personal data)")]

    def __str__(self):
        return self.message_id

    def save(self, *args, **kwargs):
        self.failure_at = self.last_failure_at
        super().save(*args, **kwargs)

    def state_copy(self):
        """Its MessageState row, as a separate object (for bulk_create)."""
        return MessageState(
            **{
                f.attname: getattr(self, f.attname)
                for f in MessageState._meta.concrete_fields
                if f.name != "failure_at"
            },
            failure_at=self.last_failure_at,
        )


class FailureGroup(models.Model):
    """Failures that look alike: same queue, exception type, message with numbers, ids and UUIDs
    masked, and top stack frames."""

    fingerprint = models.CharField(max_length=64, primary_key=True)
    queue = models.CharField(max_length=100)
    exception_type = models.CharField(max_length=200, blank=True, default="")
    pattern = models.TextField(blank=True, default="")  # the masked message
    frames = models.TextField(blank=True, default="")  # the top stack frames it was keyed on
    sample_message_id = models.CharField(max_length=200, blank=True, default="")
    sample_reason = models.TextField(blank=True, default="")
    sample_stack = models.TextField(blank=True, default="")
    count = models.BigIntegerField(default=0)
    first_seen = models.DateTimeField(null=True, blank=True)
    last_seen = models.DateTimeField(null=True, blank=True)
    states = models.JSONField(default=dict)  # state -> messages of the group in it
    # What still needs attention, from `states`: quarantined (someone must decide), then
    # waiting for a retry. Groups are ranked by these, not by their total.
    ndlv = models.BigIntegerField(db_default=0)
    wait = models.BigIntegerField(db_default=0)

    class Meta:
        indexes = [
            models.Index(fields=["count"], name="ix_group_count"),
            models.Index(fields=["-ndlv", "-wait", "-count"], name="ix_group_attention"),
        ]

    def __str__(self):
        return f"{self.queue}: {self.pattern[:60]}"

    def states_set(self, states):
        """Its members by state, and what of them needs attention."""
        self.states = states
        self.ndlv = states.get(NDLV, 0)
        self.wait = states.get(WAIT, 0)


class QueueStat(models.Model):
    queue = models.CharField(max_length=100, primary_key=True)
    counts = models.JSONField(default=dict)  # state -> messages
    updated_at = models.DateTimeField()
    # When the queue's oldest quarantined message last failed, as found for the counts of
    # `oldest_checked_at` (their updated_at then): console.readmodels.oldest keeps it, off the
    # request path, since finding it may walk many rows of other states.
    oldest_quarantined_at = models.DateTimeField(null=True, blank=True)
    oldest_checked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return self.queue


class QuarantineInflow(models.Model):
    """Messages per queue, hour and flow (workers.engine.states.FLOWS): the quarantine's inflow
    (entered NDLV) and outflow (left it by a decision), and the deliveries and failed attempts
    (the dashboard's rates). It began as the inflow alone, hence its name."""

    queue = models.CharField(max_length=100)
    hour = models.DateTimeField()
    flow = models.CharField(max_length=12, default=FLOW_QUARANTINED)
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "hour", "flow"], name="one_count_per_queue_hour_flow"
            )
        ]
        indexes = [models.Index(fields=["hour"], name="ix_inflow_hour")]

    def __str__(self):
        return f"{self.queue} {self.hour:%Y-%m-%d %H}:00 {self.flow} {self.count}"


class FlowPurged(models.Model):
    """What purges took off the hourly flows (QuarantineInflow), per queue and flow, kept for
    good: the metrics add it back (console.metrics), so their flow counters do not go down when
    old messages are purged. A full refresh recounts the flows from the lake, which no longer
    holds the purged messages, so the two still add up to every message ever counted."""

    queue = models.CharField(max_length=100)
    flow = models.CharField(max_length=12)
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["queue", "flow"], name="one_purged_count_per_flow")
        ]

    def __str__(self):
        return f"{self.queue} {self.flow}: {self.count} purged"


class RefreshRun(leases.LeasedRun):
    """One refresh of the read models; the newest committed one's cursor is where the next
    starts. Heartbeat as for delivery runs: a dead refresh is simply done again."""

    RUNNING, COMMITTED, FAILED = "running", "committed", "failed"
    STATUSES = [(s, s) for s in (RUNNING, COMMITTED, FAILED)]
    FINISHED = (COMMITTED, FAILED)

    # Dead after MISSED_BEATS heartbeats (console.leases), not a delivery run's LEASE_SECONDS:
    # taking the lock from a refresh that was only slow costs its work (its load commits only
    # while it still holds the lock, and FoldedCommit refuses a second fold), not a message's
    # count, and every minute a dead one holds the lock the console stands still (the soak: a
    # killed spark worker stopped the refreshes for two and a half minutes each time). A purge
    # or a counts check holding the lock checks it still does before it writes.
    lease_by_beats = True

    status = leases.status_field(STATUSES)
    lock = models.CharField(max_length=20, default="refresh", editable=False)
    # Not a refresh: the lock held by another writer of the read models for its duration (a
    # purge, a counts check; console.readmodels.deltas.refresh_lock_held), named here. Such a
    # row is deleted when it lets go.
    held_for = models.CharField(max_length=100, blank=True, default="")
    full = models.BooleanField(default=False)
    from_commit = models.BigIntegerField(null=True, blank=True)  # events commits after this id
    upto_commit = models.BigIntegerField(null=True, blank=True)  # ... up to and with this one
    changed = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["-id"]
        constraints = [
            # One refresh at a time: two would load the same rows and advance one cursor.
            models.UniqueConstraint(
                fields=["lock"], condition=Q(status="running"), name="one_running_refresh"
            )
        ]
        indexes = [models.Index(fields=["status", "id"], name="ix_refresh_status")]

    def __str__(self):
        return f"refresh {self.id} ({self.status})"

    def described(self):
        """What the Runs page shows of it (console.leases.RunKind.describe)."""
        if self.held_for:
            # A lock another writer holds (a purge, a counts check): no refresh runs meanwhile.
            variant, position = f"lock for {self.held_for}", "none: refreshes wait while it is held"
        elif self.full:
            variant, position = "full", f"all events commits, up to {_n(self.upto_commit)}"
        else:
            variant = "incremental"
            position = f"events commits after {_n(self.from_commit)}, up to {_n(self.upto_commit)}"
        return {
            "variant": variant,
            "from_commit": self.from_commit,
            "upto_commit": self.upto_commit,
            "changed": self.changed,
            "position": position,
            "did": f"{self.changed} row{pluralize(self.changed)} changed"
            if self.status == self.COMMITTED
            else "",
        }


def _n(commit):
    return "the start" if commit is None else str(commit)


leases.register("refresh", RefreshRun, title="refresh", order=2)


class FoldedCommit(models.Model):
    """An events commit a refresh took in: its flows counted and, unless its writer applied it to
    the read models itself (a decision's), its events folded into the states. Since the last
    full refresh, which takes them all in again and rewrites these rows. The primary key is the
    guard: a second fold of a commit counts its deliveries and flows twice, so the database
    refuses it in the load's transaction, whatever the code that lists the commits does.

    The run is kept as a number, not a foreign key: these rows must outlive any clean-up of old
    refresh rows."""

    commit_id = models.BigIntegerField(primary_key=True)
    run_id = models.BigIntegerField()

    def __str__(self):
        return f"events commit {self.commit_id} folded by refresh {self.run_id}"


class CountsCheck(leases.LeasedRun):
    """One check of the counts the console shows (queues by state, failure groups, hourly flows,
    the index's rows) against a recount from the lake (console.readmodels.verify): how many
    differed, the first of them, and whether they were repaired. The newest one says whether
    the console's numbers can be trusted now."""

    RUNNING, CLEAN, DRIFT, REPAIRED, BUSY, FAILED = (
        "running",
        "clean",
        "drift",
        "repaired",
        "busy",
        "failed",
    )
    STATUSES = [(s, s) for s in (RUNNING, CLEAN, DRIFT, REPAIRED, BUSY, FAILED)]
    FINISHED = (CLEAN, DRIFT, REPAIRED, BUSY, FAILED)

    # Its heartbeat is renewed while it recounts: one whose worker died is declared failed by
    # the sweeper.
    status = leases.status_field(STATUSES)
    actor = models.CharField(max_length=150)  # a username, "system" (the scheduler), a command
    repair = models.BooleanField(default=False)  # asked to repair what differs
    # The read models' position it checked: the newest refresh's last events commit.
    upto_commit = models.BigIntegerField(null=True, blank=True)
    messages = models.BigIntegerField(default=0)  # recounted
    differences = models.BigIntegerField(default=0)
    # The first differences: [{"what", "key", "shown", "recounted"}].
    drift = models.JSONField(default=list)

    class Meta:
        ordering = ["-id"]

    def __str__(self):
        return f"counts check {self.id} ({self.status})"


leases.register("counts_check", CountsCheck, title="counts check")
