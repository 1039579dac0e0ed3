"""Reads of the alerts: a person's console alerts (the bell), and the outbox as administrators
see it."""

from django.db.models import Count

from console.alerts import events as E
from console.alerts.models import AlertDelivery, InflowThreshold, Subscription, Webhook
from console.alerts.services import channels_for
from console.envnames import alert_secret_refusal, secret_state

OUTBOX_STATES = (AlertDelivery.PENDING, AlertDelivery.SENT, AlertDelivery.FAILED)


def unread_count(*, user):
    return AlertDelivery.objects.filter(
        user=user, channel=AlertDelivery.CONSOLE, read_at__isnull=True
    ).count()


def inbox(*, user):
    """The user's console alerts, newest first (a queryset, for a paginator)."""
    return (
        AlertDelivery.objects.filter(user=user, channel=AlertDelivery.CONSOLE)
        .select_related("alert")
        .order_by("-id")
    )


def kinds_for(user):
    """The events `user` may hear of: those whose permission they hold, and their own requests'."""
    return [
        kind
        for kind in E.KINDS
        if kind in E.REQUESTER_KINDS or (kind in E.PERMISSION and user.has_perm(E.PERMISSION[kind]))
    ]


def subscriptions_of(user):
    """[(kind, label, console, email, queues, is_default)] for every event `user` may hear of."""
    chosen = {s.kind: s for s in Subscription.objects.filter(user=user)}
    rows = []
    for kind in kinds_for(user):
        subscription = chosen.get(kind)
        console, email = channels_for(user, kind, subscription)
        queues = subscription.queues if subscription else []
        rows.append((kind, E.LABELS[kind], console, email, queues, subscription is None))
    return rows


def outbox(*, state="", channel=""):
    """Email and webhook deliveries (the console's are in people's bells), newest first."""
    found = (
        AlertDelivery.objects.exclude(channel=AlertDelivery.CONSOLE)
        .select_related("alert", "webhook", "user")
        .order_by("-id")
    )
    if state:
        found = found.filter(state=state)
    if channel:
        found = found.filter(channel=channel)
    return found


def outbox_counts():
    """{state: deliveries} over the email and webhook deliveries."""
    counts = dict.fromkeys(OUTBOX_STATES, 0)
    for row in (
        AlertDelivery.objects.exclude(channel=AlertDelivery.CONSOLE)
        .values("state")
        .annotate(n=Count("id"))
    ):
        counts[row["state"]] = row["n"]
    return counts


def webhooks():
    """[(webhook, what may be shown of its secret)]: "set" or "not set" in this process, or why
    its variable is refused; never anything derived from the secret itself."""
    return [(hook, _secret_shown(hook)) for hook in Webhook.objects.order_by("name")]


def _secret_shown(hook):
    if not hook.secret_env or hook.format not in Webhook.WITH_SECRET:
        return ""
    refusal = alert_secret_refusal(hook.secret_env)
    return f"refused: {refusal}" if refusal else secret_state(hook.secret_env)


def thresholds():
    return list(InflowThreshold.objects.order_by("queue"))
