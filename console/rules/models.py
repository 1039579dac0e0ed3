"""Standing rules (issue 46): decisions that stand, proposed by one person and approved by a
second before they act (R17), until someone removes them.

- archive: FAIL the quarantined messages of a queue (and a failure group or an exception type)
  that have stood untouched for N days, daily;
- redirect: every reprocess of a queue's messages back to their own queue goes to another one;
- auto-retry: reprocess a failure group's new failures after a delay, at most K times a message,
  in steps that stop on re-failures as a request's do.

A rule never acts on a message someone investigates (it, or its group). Whatever a rule does, it
does through an action request (console.decisions), approved by the rule's own approval: the
request, its execution and the messages' history say so, and each application is recorded here
and in the audit trail."""

from django.db import models
from django.db.models import Q

from console.model_fields import person

ARCHIVE = "archive"
REDIRECT = "redirect"
AUTO_RETRY = "auto_retry"
KINDS = [(ARCHIVE, "archive"), (REDIRECT, "redirect"), (AUTO_RETRY, "auto-retry")]

NAME_MAX = 100
COMMENT_MAX = 2000
# Ranges of the parameters: days of quarantine before archiving, the delay before a retry, and
# retries of one message.
DAYS_MAX = 3650
DELAY_MAX_SECONDS = 30 * 86400
ATTEMPTS_MAX = 100


class StandingRule(models.Model):
    PROPOSED = "proposed"  # waits for a second person
    ACTIVE = "active"
    REJECTED = "rejected"
    WITHDRAWN = "withdrawn"  # its proposer took it back before anyone decided
    REMOVED = "removed"  # removed by someone, or replaced by a newer rule of its name
    STOPPED = "stopped"  # an auto-retry whose retry stopped on re-failures: a person looks
    STATUSES = [(s, s) for s in (PROPOSED, ACTIVE, REJECTED, WITHDRAWN, REMOVED, STOPPED)]
    FINAL = (REJECTED, WITHDRAWN, REMOVED, STOPPED)

    # A name people and queue files know it by: a newer rule of the same name, once approved,
    # replaces the active one.
    name = models.CharField(max_length=NAME_MAX)
    kind = models.CharField(max_length=12, choices=KINDS)
    comment = models.TextField()  # why

    # Its parameters, those of its kind (the others empty):
    # archive: queue, group or exception type (or both), days;
    # redirect: queue (from), to_queue;
    # auto-retry: group (and its queue, for the lists), delay, attempts, steps and threshold.
    queue = models.CharField(max_length=100, blank=True, default="")
    group = models.CharField(max_length=64, blank=True, default="")
    exception_type = models.CharField(max_length=200, blank=True, default="")
    days = models.PositiveIntegerField(null=True, blank=True)
    to_queue = models.CharField(max_length=100, blank=True, default="")
    delay_seconds = models.PositiveIntegerField(null=True, blank=True)
    max_attempts = models.PositiveIntegerField(null=True, blank=True)
    steps = models.JSONField(default=list, blank=True)
    refailure_threshold = models.FloatField(default=0)

    status = models.CharField(max_length=12, choices=STATUSES, default=PROPOSED)
    from_file = models.BooleanField(default=False)  # proposed by loading a queue file
    proposed_by = person()
    proposed_at = models.DateTimeField()
    decided_by = person(optional=True)
    decided_at = models.DateTimeField(null=True, blank=True)  # approved (active from) or not
    decision_comment = models.TextField(blank=True, default="")
    # How it ended: removed, withdrawn or stopped, by whom (nobody: stopped by its own retry, or
    # replaced), when and why.
    ended_by = person(optional=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    end_comment = models.TextField(blank=True, default="")
    # When its application last looked at the quarantine, and what it found then.
    checked_at = models.DateTimeField(null=True, blank=True)
    last_check = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-id"]
        permissions = [("approve_standingrule", "Can approve or reject others' standing rules")]
        constraints = [
            models.UniqueConstraint(
                fields=["name"], condition=Q(status="active"), name="one_active_rule_per_name"
            ),
            models.UniqueConstraint(
                fields=["name"], condition=Q(status="proposed"), name="one_proposal_per_name"
            ),
            # Where a queue's reprocesses go is one rule's say.
            models.UniqueConstraint(
                fields=["queue"],
                condition=Q(kind="redirect", status="active"),
                name="one_redirect_per_queue",
            ),
        ]
        indexes = [models.Index(fields=["status", "kind"], name="ix_rule_status_kind")]

    def __str__(self):
        return f"standing rule {self.id} {self.name!r} ({self.kind}, {self.status})"

    @property
    def said(self):
        """The rule in a few words, as requests, the audit trail and the history name it."""
        return f"standing rule {self.id} ({self.get_kind_display()} {self.name})"


class RuleApplication(models.Model):
    """One time a rule acted: the request it made (archive, auto-retry) or redirected (redirect),
    how many messages it holds, and what the rule left alone then and why. A request may be of
    two rules: an auto-retry's reprocess that a redirect sends on."""

    rule = models.ForeignKey(StandingRule, on_delete=models.PROTECT, related_name="applications")
    request = models.ForeignKey(
        "decisions.ActionRequest", on_delete=models.PROTECT, related_name="+"
    )
    at = models.DateTimeField()
    count = models.BigIntegerField()
    # {"investigated": n, "touched": n, "held": n, "exhausted": n}: left alone, by reason.
    left_alone = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["rule", "-at"], name="ix_application_rule")]
        constraints = [
            models.UniqueConstraint(fields=["rule", "request"], name="one_application_a_request")
        ]

    def __str__(self):
        return f"{self.rule_id} applied in request {self.request_id}"


class RuleRetry(models.Model):
    """How many times an auto-retry rule reprocessed one message: at most its max_attempts."""

    rule = models.ForeignKey(StandingRule, on_delete=models.CASCADE, related_name="+")
    message_id = models.CharField(max_length=200)
    attempts = models.PositiveIntegerField(default=0)
    last_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["rule", "message_id"], name="one_count_per_message")
        ]

    def __str__(self):
        return f"{self.message_id}: {self.attempts} retries by rule {self.rule_id}"
