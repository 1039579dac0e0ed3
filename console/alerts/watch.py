"""The watches the default worker looks at every ALERTS_WATCH_SECONDS: conditions that no single
write causes (a queue's inflow over its threshold in a window, a broker consumer that died
without saying so). What they find is raised once per dedupe period."""

from datetime import timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Sum
from django.urls import reverse
from django.utils import timezone

from console.alerts import events as E
from console.alerts.models import Alert, AlertDelivery, InflowThreshold
from console.alerts.services import alert_raise
from console.plurals import counted
from console.queues.selectors import NOT_RUNNING, source_status_list
from console.readmodels.models import QuarantineInflow
from workers.engine.states import FLOW_QUARANTINED, NDLV


def alerts_watch(*, now=None):
    """Look at every watch, and forget the old alerts; returns the alerts raised (repeats
    within a period are not)."""
    now = now or timezone.now()
    raised = [*_inflow_over(now), *_sources_silent(now)]
    alerts_forget(now=now)
    return [a.id for a in raised if a is not None]


def alerts_forget(*, now=None):
    """Delete the alerts older than ALERTS_KEEP_DAYS, with their deliveries, except those with a
    delivery still to send. Returns how many alerts went. What they were about stays in the
    audit trail (their causes are audited), not in the outbox."""
    now = now or timezone.now()
    old = Alert.objects.filter(created_at__lt=now - timedelta(days=settings.ALERTS_KEEP_DAYS))
    pending = AlertDelivery.objects.filter(state=AlertDelivery.PENDING).values("alert_id")
    return old.exclude(id__in=pending).delete()[1].get(Alert._meta.label, 0)


def inflow_in_window(queue, window_hours, now):
    """Messages `queue` quarantined in the last `window_hours` clock hours, this one included
    (the read models count by hour)."""
    since = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=window_hours - 1)
    return (
        QuarantineInflow.objects.filter(
            queue=queue, flow=FLOW_QUARANTINED, hour__gte=since
        ).aggregate(n=Sum("count"))["n"]
        or 0
    )


def _inflow_over(now):
    for threshold in InflowThreshold.objects.order_by("queue"):
        count = inflow_in_window(threshold.queue, threshold.window_hours, now)
        if count < threshold.count:
            continue
        hours = "this hour" if threshold.window_hours == 1 else f"{threshold.window_hours} hours"
        yield alert_raise(
            kind=E.QUEUE_INFLOW,
            about=threshold.queue,
            title=f"Queue {threshold.queue} quarantined {counted(count, 'message')} in {hours}",
            text=(
                f"The queue {threshold.queue} quarantined {counted(count, 'message')} in {hours}; "
                f"its threshold is {threshold.count:,}."
            ),
            link=reverse("message-list")
            + "?"
            + urlencode({"queue": threshold.queue, "state": NDLV}),
            queue=threshold.queue,
            details={
                "count": count,
                "threshold": threshold.count,
                "window_hours": threshold.window_hours,
            },
        )


def _sources_silent(now):
    # A consumer that says it is down raises its alert as it says so (receivers); one killed
    # says nothing, and only its heartbeat's silence tells.
    for source in source_status_list(now=now):
        if source.state != NOT_RUNNING:
            continue
        since = source.heartbeat_at.isoformat() if source.heartbeat_at else "never"
        yield alert_raise(
            kind=E.SOURCE_DOWN,
            about=source.name,
            title=f"Broker source {source.name} is not running",
            text=(
                f"The consumer of {source.name} (broker queue {source.broker_queue}, into "
                f"{source.queue}) has written no heartbeat since {since}."
            ),
            link=reverse("queue-list"),
            queue=source.queue,
            details={"source": source.name, "state": NOT_RUNNING, "heartbeat_at": since},
        )
