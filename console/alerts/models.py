"""Alerts that reach people: what happened (Alert), and its deliveries through an outbox
(AlertDelivery), one per recipient and channel: the console's bell, email, a webhook.

An alert and its deliveries are written in the transaction of their cause (a queue disabled, a
request approved, a refresh that found a new failure group), so an alert exists exactly when its
cause does. The default worker sends what is due (console.alerts.sending) with retries and
backoff; whatever a killed worker or a mail server that is down left unsent is due again."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from console.alerts import events as E
from console.model_fields import person
from workers.redaction import url_redacted


class Alert(models.Model):
    kind = models.CharField(max_length=40, choices=[(k, E.LABELS[k]) for k in E.KINDS])
    # One alert per thing and period (console.alerts.services.alert_raise): what is raised again
    # within the period is counted here instead.
    dedupe_key = models.CharField(max_length=300, unique=True)
    repeats = models.PositiveIntegerField(default=0)
    title = models.CharField(max_length=300)
    text = models.TextField()
    link = models.CharField(max_length=500, blank=True, default="")  # a path in the console
    queue = models.CharField(max_length=100, blank=True, default="")
    details = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self):
        return f"alert {self.id}: {self.title}"


class Webhook(models.Model):
    """A URL that receives alerts, in its service's format (console.alerts.formats): signed JSON
    of our own (generic), a Slack or a Microsoft Teams message, a PagerDuty event. Secrets never
    enter the database: the signing secret (generic) or the routing key (PagerDuty) is read from
    the environment variable `secret_env` when a delivery is sent; of it, only whether it is set
    is shown. `secret_env` names only a variable alerts may read (console.envnames): one saved
    before that rule, or refused since, is disabled, `disabled_reason` saying why. Slack and
    Teams need none: their URL is their key."""

    GENERIC, SLACK, TEAMS, PAGERDUTY = "generic", "slack", "teams", "pagerduty"
    FORMATS = [
        (GENERIC, "generic (signed JSON)"),
        (SLACK, "Slack (incoming webhook)"),
        (TEAMS, "Microsoft Teams (workflow webhook)"),
        (PAGERDUTY, "PagerDuty (Events API v2)"),
    ]
    # The formats whose secret_env names a variable (the others have no secret but their URL).
    WITH_SECRET = (GENERIC, PAGERDUTY)

    name = models.CharField(max_length=100, unique=True)
    format = models.CharField(max_length=10, choices=FORMATS, default=GENERIC)
    url = models.URLField(max_length=500)
    kinds = models.JSONField(default=list)  # the events it receives; empty: all
    queues = models.JSONField(default=list)  # the queues it hears of; empty: all
    secret_env = models.CharField(max_length=100, blank=True, default="")
    active = models.BooleanField(default=True)
    # Why it was disabled by the product rather than by a person; cleared when enabled again.
    disabled_reason = models.CharField(max_length=500, blank=True, default="")
    created_by = person()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"webhook {self.name}"


class AlertDelivery(models.Model):
    CONSOLE, EMAIL, WEBHOOK = "console", "email", "webhook"
    CHANNELS = [(CONSOLE, "console"), (EMAIL, "email"), (WEBHOOK, "webhook")]
    PENDING, SENT, FAILED = "pending", "sent", "failed"
    STATES = [(PENDING, "pending"), (SENT, "sent"), (FAILED, "failed")]

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.CharField(max_length=10, choices=CHANNELS)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    webhook = models.ForeignKey(
        Webhook, on_delete=models.CASCADE, null=True, blank=True, related_name="deliveries"
    )
    address = models.CharField(max_length=500, blank=True, default="")  # email or URL, as sent
    state = models.CharField(max_length=10, choices=STATES, default=PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # When it is due: its next attempt, or, while a worker holds it, when that claim runs out.
    due_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    read_at = models.DateTimeField(null=True, blank=True)  # the bell: when its user saw it

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(
                fields=["due_at"], condition=Q(state="pending"), name="ix_alert_delivery_due"
            ),
            # The bell's unread count, on every page.
            models.Index(fields=["user", "channel", "read_at"], name="ix_alert_delivery_inbox"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False) | Q(webhook__isnull=False),
                name="alert_delivery_has_recipient",
            )
        ]

    def __str__(self):
        return f"{self.channel} delivery {self.id} of alert {self.alert_id} ({self.state})"

    @property
    def address_shown(self):
        """Where it goes, as logs, the outbox and the audit trail show it: an email address, or
        a webhook's URL redacted to its origin (Slack's and Teams' carry their key in the path,
        others a token in the query)."""
        if self.channel == self.WEBHOOK:
            return url_redacted(self.address)
        return self.address


class Subscription(models.Model):
    """What a person wants to hear of one event, where their role's default does not suit: by
    which channels, and of which queues. No row: the role's default (console.alerts.events)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=40, choices=[(k, E.LABELS[k]) for k in E.KINDS])
    console = models.BooleanField(default=True)
    email = models.BooleanField(default=False)
    queues = models.JSONField(default=list)  # empty: all

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "kind"], name="one_subscription_per_event")
        ]

    def __str__(self):
        return f"{self.user} on {self.kind}"


class InflowThreshold(models.Model):
    """Alert when a queue quarantines at least `count` messages within `window_hours`."""

    queue = models.CharField(max_length=100, unique=True)
    count = models.PositiveIntegerField()
    window_hours = models.PositiveIntegerField(default=1)
    updated_by = person()
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"{self.queue}: {self.count} in {self.window_hours} h"
