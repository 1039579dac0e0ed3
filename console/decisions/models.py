"""Administrators' decisions on quarantined messages (R13): action requests, their frozen scope
and their approval."""

from django.conf import settings
from django.db import models


class ActionRequest(models.Model):
    REPROCESS, FAIL, END = "reprocess", "fail", "end_with_error"
    ACTIONS = [(REPROCESS, "reprocess"), (FAIL, "fail"), (END, "end with error")]

    PENDING = "pending"  # waits for a second person's approval
    APPROVED = "approved"  # may run (approved, or needing no approval)
    REJECTED = "rejected"
    WITHDRAWN = "withdrawn"
    EXPIRED = "expired"
    RUNNING = "running"
    CANCELLED = "cancelled"
    DONE = "done"
    FAILED = "failed"
    STATUSES = [
        (s, s)
        for s in (PENDING, APPROVED, REJECTED, WITHDRAWN, EXPIRED, RUNNING, CANCELLED, DONE, FAILED)
    ]

    action = models.CharField(max_length=20, choices=ACTIONS)
    target_queue = models.CharField(max_length=100, blank=True, default="")  # reprocess elsewhere
    edited_body = models.BinaryField(null=True, blank=True)  # reprocess one message, edited
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

    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=12, choices=STATUSES)
    needs_approval = models.BooleanField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True, default="")
    expires_at = models.DateTimeField(null=True, blank=True)  # an approval is good until then

    class Meta:
        ordering = ["-id"]
        permissions = [("approve_actionrequest", "Can approve or reject others' action requests")]
        indexes = [models.Index(fields=["status", "id"], name="ix_request_status")]

    def __str__(self):
        return f"request {self.id}: {self.action} of {self.count} message(s) ({self.status})"
