"""What /metrics reports, read from the console database: the read models the refresh keeps, the
runs' and requests' own rows, the processes' heartbeats. Never the lake: a scrape every few
seconds must cost a few indexed queries."""

from dataclasses import dataclass
from datetime import datetime

from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone

from console.alerts.models import AlertDelivery
from console.browse.counts import state_counts
from console.decisions.models import ActionRequest
from console.lake.models import LakeCommit
from console.processes.selectors import process_heartbeat_ages
from console.queues.models import BrokerSource, Queue
from console.readmodels.models import FlowPurged, QuarantineInflow, QueueStat
from console.readmodels.selectors import read_models_folded_upto
from console.runs.totals import delivery_run_totals


def queue_state_counts():
    """[(queue, [(state, messages)])] as the dashboard counts them (console.browse.selectors
    dashboard_stats: the queues' stats as of the last refresh)."""
    return [(stat.queue, state_counts(stat.counts)) for stat in QueueStat.objects.order_by("queue")]


def quarantine_oldest(*, queues, now=None):
    """{queue: seconds since its oldest quarantined message last failed} for each of `queues`
    (those with a quarantined message), as the refresh's task last found it
    (console.readmodels.oldest): one query, whatever the queues hold."""
    now = now or timezone.now()
    found = QueueStat.objects.filter(queue__in=queues, oldest_quarantined_at__isnull=False)
    return {
        queue: max((now - at).total_seconds(), 0.0)
        for queue, at in found.values_list("queue", "oldest_quarantined_at")
    }


def flow_totals():
    """[(queue, flow, messages)] ever counted by the hourly flows: the hours the read models hold
    (QuarantineInflow) and what purges took off them (FlowPurged). One statement, so a purge
    that commits meanwhile is seen whole or not at all: the totals never go down."""
    name = connection.ops.quote_name
    queue, flow, count = name("queue"), name("flow"), name("count")
    columns = f"{queue}, {flow}, {count}"
    sql = (
        f"SELECT {queue}, {flow}, SUM({count}) FROM ("  # noqa: S608 - names, no values
        f"SELECT {columns} FROM {name(QuarantineInflow._meta.db_table)} UNION ALL "
        f"SELECT {columns} FROM {name(FlowPurged._meta.db_table)}"
        f") counted GROUP BY {queue}, {flow} ORDER BY {queue}, {flow}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return [(q, f, int(n)) for q, f, n in cursor.fetchall()]


def read_models_lag(*, now=None):
    """Seconds since the oldest events commit the read models have not folded yet was committed:
    how far behind the lake the console's numbers are. 0 when they hold every commit."""
    now = now or timezone.now()
    unfolded = LakeCommit.objects.filter(dataset="events", views_applied=False)
    upto = read_models_folded_upto()
    if upto is not None:
        unfolded = unfolded.filter(id__gt=upto)
    first = unfolded.order_by("id").values_list("created_at", flat=True).first()
    return max((now - first).total_seconds(), 0.0) if first else 0.0


@dataclass
class RequestCounts:
    by_status: dict  # status -> requests, for every status that is not final
    oldest_pending: datetime | None


def action_request_counts():
    """Requests still open (pending approval, approved, running, watching a canary), and when the
    oldest one still waiting for approval was asked."""
    open_statuses = [s for s, _ in ActionRequest.STATUSES if s not in ActionRequest.FINAL]
    by_status = dict.fromkeys(open_statuses, 0)
    by_status.update(
        ActionRequest.objects.filter(status__in=open_statuses)
        .order_by()
        .values_list("status")
        .annotate(n=Count("id"))
    )
    oldest = (
        ActionRequest.objects.filter(status=ActionRequest.PENDING)
        .order_by("id")
        .values_list("created_at", flat=True)
        .first()
    )
    return RequestCounts(by_status=by_status, oldest_pending=oldest)


def break_glass_unreviewed_counts(*, now=None):
    """{overdue: decisions carried out by break-glass whose review is still to come}, False and
    True each present; along the partial index of the unreviewed ones."""
    now = now or timezone.now()
    counted = ActionRequest.objects.filter(
        break_glass_at__isnull=False, reviewed_at__isnull=True
    ).aggregate(waiting=Count("id"), overdue=Count("id", filter=Q(review_due_at__lte=now)))
    return {False: counted["waiting"] - counted["overdue"], True: counted["overdue"]}


def alert_outbox_backlog():
    """Alert deliveries (email, webhook, the console's bell) not sent yet."""
    return AlertDelivery.objects.filter(state=AlertDelivery.PENDING).count()


def queue_enabled_list():
    """[(queue, enabled)] of every queue."""
    return list(Queue.objects.order_by("name").values_list("name", "enabled"))


def source_lag_list():
    """[(source, kind, dead letters waiting on its broker)] of the sources whose broker said."""
    return list(
        BrokerSource.objects.exclude(lag=None).order_by("name").values_list("name", "kind", "lag")
    )


def heartbeat_ages(*, now=None):
    """{(kind, host, pid): seconds since its last beat} of the processes that have not stopped."""
    return process_heartbeat_ages(now=now)


def delivery_totals(*, now=None):
    """The delivery runs' counters (console.runs.totals): they only ever grow."""
    return delivery_run_totals(now=now)
