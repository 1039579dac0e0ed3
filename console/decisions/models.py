"""Administrators' decisions on quarantined messages (R13): action requests, their frozen scope
and their approval."""

import uuid

from django.conf import settings
from django.db import models

from console import leases
from console.model_fields import person
from workers.engine import actions as A
from workers.jobs import decisions as D


class ActionRequest(leases.LeasedRun):
    REPROCESS, FAIL, END = A.REPROCESS, A.FAIL, A.END
    ACTIONS = [(action, A.LABELS[action]) for action in A.ACTIONS]

    PENDING = "pending"  # waits for a second person's approval
    APPROVED = "approved"  # may run (approved, or needing no approval)
    REJECTED = "rejected"
    WITHDRAWN = "withdrawn"
    EXPIRED = "expired"
    RUNNING = "running"
    # A step of a progressive redrive (a canary is its one step) is committed; waiting for its
    # messages' delivery outcome before the next step goes.
    CANARY = "canary"
    CANCELLED = "cancelled"
    DONE = "done"
    FAILED = "failed"
    STATUSES = [
        (s, s)
        for s in (
            PENDING,
            APPROVED,
            REJECTED,
            WITHDRAWN,
            EXPIRED,
            RUNNING,
            CANARY,
            CANCELLED,
            DONE,
            FAILED,
        )
    ]
    # Statuses a request never leaves.
    FINAL = (REJECTED, WITHDRAWN, EXPIRED, CANCELLED, DONE, FAILED)
    # As a leased run: from its approval until it ends, executed.
    ACTIVE, FINISHED = (APPROVED, RUNNING, CANARY), (CANCELLED, DONE, FAILED)
    lease_by_beats = True

    action = models.CharField(max_length=20, choices=ACTIONS)
    target_queue = models.CharField(max_length=100, blank=True, default="")  # reprocess elsewhere
    # Reprocess only: where a broker sink sends each message for this request rather than its
    # origin ({"exchange", "routing_key"}, {"subject"}, {"stream"} or {"url"}; services
    # REDRIVE_TARGET_KEYS); null: to its origin, or where the redrive queue's options say.
    redrive_target = models.JSONField(null=True, blank=True)
    edited_body = models.BinaryField(null=True, blank=True)  # reprocess one message, edited
    # Reprocess one message with its headers edited: the headers its new version carries, whole,
    # as JSON text (the product's own and the queue's locked ones kept as they were:
    # console.decisions.header_edits); null: its headers as they are.
    edited_headers = models.TextField(null=True, blank=True)
    # What that edit changes, as the approver sees it: [[added|removed|changed, name, before,
    # after]] against the headers the message had when the request was made.
    header_changes = models.JSONField(default=list, blank=True)
    # A bulk edit: the JSON Patch (RFC 6902) each message's body gets before it is reprocessed,
    # as JSON text (its members' order kept: a value's members become a body's), and its preview
    # as frozen when the request was made: a few of its messages, each with the diff of its body
    # or why the patch does not apply to it (console.decisions.patch_preview).
    patch = models.TextField(null=True, blank=True)
    patch_preview = models.JSONField(default=list, blank=True)
    error_code = models.CharField(max_length=100, blank=True, default="")  # end with error
    error_description = models.TextField(blank=True, default="")
    comment = models.TextField()

    # The scope as asked (kind: message, selection, group, filter) and as frozen at creation.
    scope = models.JSONField()
    ids_path = models.CharField(max_length=500)  # lake file of the sorted ids
    ids_sha256 = models.CharField(max_length=64)
    count = models.BigIntegerField()
    breakdown = models.JSONField(default=dict)  # {"queues": {q: n}, "groups": {g: n}}
    sample = models.JSONField(default=list)  # a few of the messages, as the approver sees them

    requester = person()
    created_at = models.DateTimeField(auto_now_add=True)
    status = leases.status_field(STATUSES, default=None)
    needs_approval = models.BooleanField()
    decided_by = person(optional=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True, default="")
    expires_at = models.DateTimeField(null=True, blank=True)  # an approval is good until then
    # Why a second person must approve (R17), in words the request page shows; "" when no one
    # must: what the decision does (edits a body, moves to another queue, ends conversations),
    # its size, or the requester's budget of unapproved decisions spent.
    approval_reason = models.TextField(blank=True, default="")

    # Break-glass (R17): an approver or administrator executed the pending request alone, with a
    # reason; a second person reviews it afterwards (agrees, or disagrees with a reason) before
    # review_due_at, past which an alert is raised once.
    break_glass_by = person(optional=True)
    break_glass_at = models.DateTimeField(null=True, blank=True)
    break_glass_reason = models.TextField(blank=True, default="")
    review_due_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = person(optional=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_agrees = models.BooleanField(null=True, blank=True)
    review_comment = models.TextField(blank=True, default="")
    review_overdue_alerted_at = models.DateTimeField(null=True, blank=True)

    # Execution options (reprocess only): at most this many messages a second, and a progressive
    # redrive: steps of so many messages each (then the rest), each next step going only when at
    # most refailure_threshold percent of the last step's messages failed again. A canary of N
    # is the one step [N] with a threshold of 0.
    rate_limit = models.PositiveIntegerField(null=True, blank=True)
    steps = models.JSONField(default=list, blank=True)
    refailure_threshold = models.FloatField(default=0)

    # Execution: a lease by heartbeat like a delivery run's, and progress counted per chunk in
    # the same transaction that commits the chunk.
    epoch = models.BigIntegerField(null=True, blank=True)
    plan_path = models.CharField(max_length=500, blank=True, default="")
    plan_upto = models.BigIntegerField(null=True, blank=True)  # last events commit it folded
    # A reprocess plans from the message index (as of its refresh, plan_upto) rather than from a
    # fold of the whole lake: console.decisions.execution.
    plan_from_index = models.BooleanField(default=False)
    chunk_size = models.PositiveIntegerField(default=0)
    chunks_total = models.PositiveIntegerField(default=0)
    chunks_done = models.PositiveIntegerField(default=0)
    done = models.BigIntegerField(default=0)  # decided
    skipped = models.BigIntegerField(default=0)  # changed since the request: no longer NDLV
    failed = models.BigIntegerField(default=0)  # could not be decided (see error)
    siblings_ended = models.BigIntegerField(default=0)  # end with error: conversations' others
    notifications = models.BigIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    cancelled_by = person(optional=True)
    canary_commit = models.BigIntegerField(null=True, blank=True)  # events commit of the step
    canary_result = models.TextField(blank=True, default="")  # the last step's outcome, said
    # Per step, its outcome as the decisions sweeper last read it: step, size, delivered,
    # refailed, pending, rate (percent), verdict, reasons [[reason, messages]].
    step_results = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-id"]
        permissions = [("approve_actionrequest", "Can approve or reject others' action requests")]
        indexes = [
            models.Index(fields=["status", "id"], name="ix_request_status"),
            # A person's unapproved decisions in the last hour (R17's budget).
            models.Index(fields=["requester", "created_at"], name="ix_request_requester"),
            # Break-glass decisions still waiting for their review (dashboard, overdue sweep).
            models.Index(
                fields=["review_due_at"],
                name="ix_request_unreviewed",
                condition=models.Q(break_glass_at__isnull=False, reviewed_at__isnull=True),
            ),
        ]

    def __str__(self):
        return f"request {self.id}: {self.action} of {self.count} message(s) ({self.status})"

    @property
    def canary(self):
        """The first step's size (the canary), 0 without steps."""
        return self.steps[0] if self.steps else 0

    @property
    def step_now(self):
        """The step being carried out or watched (from 1), None when none is."""
        if self.status == self.CANARY:
            return self.chunks_done
        if self.status == self.RUNNING and self.chunks_done < len(self.progression):
            return self.chunks_done + 1
        return None

    @property
    def progression(self):
        """Each step as the request page and the API show it: its size (the frozen set cut into
        the steps asked), and once committed what became of its messages. status: waiting (not
        yet), watching (committed, its delivery outcome awaited), passed, failed, reprocessed
        (committed and not watched: nothing came after it, or it reprocessed nothing), or not
        run (the request ended before it)."""
        rows = []
        for index, size in enumerate(D.step_sizes(self.steps, self.count)):
            result = self.step_results[index] if index < len(self.step_results) else {}
            if result:
                status = {"pending": "watching"}.get(result["verdict"], result["verdict"])
            elif index < self.chunks_done:
                status = "reprocessed"
            elif self.status in self.FINAL:
                status = "not run"
            else:
                status = "waiting"
            rows.append(
                {
                    "step": index + 1,
                    "size": size,
                    "status": status,
                    "reprocessed": result.get("size"),
                    "delivered": result.get("delivered"),
                    "refailed": result.get("refailed"),
                    "pending": result.get("pending"),
                    "rate": result.get("rate"),
                    "rate_said": D.percent(result["rate"]) if "rate" in result else "",
                    "reasons": result.get("reasons", []),
                }
            )
        return rows

    @property
    def threshold_said(self):
        """The re-failure threshold as the request page says it: "2.5%"."""
        return D.percent(self.refailure_threshold)

    @property
    def steps_rest(self):
        """How many of the frozen set go after the last step."""
        return max(0, self.count - sum(self.steps))

    @property
    def progress(self):
        """Share of the frozen set dealt with (decided, skipped or failed), 0 to 100."""
        if not self.count:
            return 0
        return min(100, round(100 * (self.done + self.skipped + self.failed) / self.count))


leases.register("decision", ActionRequest, title="decision's execution")


class ActionChunk(models.Model):
    """One committed chunk of a request's execution. Its row is written in the transaction that
    commits the chunk's events, and (request, index) is unique: a chunk is decided once, however
    often a worker dies or a task is delivered twice."""

    request = models.ForeignKey(ActionRequest, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    done = models.IntegerField(default=0)
    skipped = models.IntegerField(default=0)
    failed = models.IntegerField(default=0)
    siblings_ended = models.IntegerField(default=0)
    events_commit = models.BigIntegerField(null=True, blank=True)
    # Members a bulk edit could not edit (its patch does not apply, or its result is refused):
    # [{"message_id", "reason"}], the first FAILURES_KEPT of the chunk's; they stay quarantined.
    failures = models.JSONField(default=list, blank=True)
    committed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["request", "index"]
        constraints = [
            models.UniqueConstraint(fields=["request", "index"], name="one_commit_per_chunk")
        ]

    def __str__(self):
        return f"request {self.request_id} chunk {self.index}"


class Selection(models.Model):
    """Message ids a person ticked on the message list, across pages, kept for the request screens
    that act on them. Up to MAX_SELECTION ids do not fit in a URL (nor in Django's limit of form
    fields), so the list posts them here once and the screens name the selection by its key. A
    selection is its owner's alone, and is forgotten after SELECTION_HOURS."""

    key = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    ids = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self):
        return f"selection {self.key} of {len(self.ids)} ids"
