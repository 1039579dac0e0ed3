"""Reads of the counts the read models keep (QueueStat, QuarantineInflow, FailureGroup, the
counts check): messages per state overall and per queue, the dashboard's numbers, hourly flows,
what the message list's pickers offer and failure groups' sparklines; the queues page's are
console.queues.selectors'. Nothing here writes (R12)."""

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, Sum
from django.db.models.functions import TruncHour

from console.browse.selectors import message_match_count
from console.delivery.models import DeliveryRun
from console.ingest.models import MessageKey
from console.queues.models import Queue
from console.readmodels.models import (
    CountsCheck,
    FailureGroup,
    MessageIndex,
    QuarantineInflow,
    QueueStat,
)
from console.readmodels.queue_counts import state_counts
from workers.engine.states import DLVD, FLOWS, NDLV

INFLOW_HOURS = 7 * 24


def queues_disabled():
    return list(Queue.objects.filter(enabled=False).order_by("name"))


def flow_series(*, hours=INFLOW_HOURS, end=None, queue=None):
    """{flow: [(hour, n)]} for every flow of FLOWS (into and out of quarantine, delivered,
    failed attempts), all queues together or `queue`'s, over the same `hours` up to `end` (by
    default the latest hour with any count), zeros included; every series empty if none."""
    counted = QuarantineInflow.objects.all()
    if queue:
        counted = counted.filter(queue=queue)
    latest = end or counted.order_by("-hour").values_list("hour", flat=True).first()
    if latest is None:
        return {flow: [] for flow in FLOWS}
    latest = latest.replace(minute=0, second=0, microsecond=0)
    start = latest - timedelta(hours=hours - 1)
    sums = {
        (flow, hour): int(n)
        for flow, hour, n in counted.filter(hour__gte=start, hour__lte=latest)
        .values("flow", "hour")
        .annotate(n=Sum("count"))
        .values_list("flow", "hour", "n")
    }
    moments = [start + timedelta(hours=i) for i in range(hours)]
    return {flow: [(at, sums.get((flow, at), 0)) for at in moments] for flow in FLOWS}


def dashboard_stats():
    """The dashboard's numbers: messages per state overall and per queue, quarantined now."""
    per_queue = []
    totals = {}
    latest = None
    for stat in QueueStat.objects.order_by("queue"):
        counts = state_counts(stat.counts)
        per_queue.append((stat.queue, counts))
        for state, n in counts:
            totals[state] = totals.get(state, 0) + n
        latest = max(latest, stat.updated_at) if latest else stat.updated_at
    return {
        "totals": state_counts(totals),
        "per_queue": per_queue,
        "quarantined": totals.get(NDLV, 0),
        "updated_at": latest,
        # DLVD counts every delivered message; the browser lists those that failed first.
        "delivered_after_failure": message_match_count(filters={"state": DLVD}),
    }


def counts_check_latest():
    """The newest check of the counts against the lake (console.readmodels.verify), or None."""
    check = CountsCheck.objects.order_by("-id").first()
    if check is None:
        return None
    return {
        "status": check.status,
        "finished_at": check.finished_at,
        "differences": check.differences,
    }


def first_run():
    """What the dashboard says before its first counts: how many messages were taken in, and the
    delivery run under way (or the last one) with when it started. Read only while no queue
    has stats yet, so the count is of a young system's keys."""
    run = DeliveryRun.objects.order_by("-id").first()
    return {
        "ingested": MessageKey.objects.count(),
        "run": run,
        "running": run is not None and run.status == DeliveryRun.RUNNING,
    }


# The message list's pickers offer at most this many failure groups (the most pressing first); a
# group further down is still chosen from its page, or typed.
PICKER_GROUPS = 100


@dataclass
class FilterChoices:
    """What the message list's pickers offer, each with how many messages the list would show
    for it, from the read models' counts (as of the last refresh)."""

    queues: list  # [(queue, n)]
    states: list  # [(state, n)]
    exception_types: list  # [(exception type, n)]
    groups: list  # [(fingerprint, pattern, n)]


def filter_choices():
    listed = {}  # state -> messages the list holds in it (DLVD: those that failed first)
    queues = []
    for stat in QueueStat.objects.order_by("queue"):
        counts = {s: int(n) for s, n in (stat.counts or {}).items()}
        for state, n in counts.items():
            listed[state] = listed.get(state, 0) + n
        queues.append((stat.queue, sum(n for state, n in counts.items() if state != DLVD)))
    if DLVD in listed:
        listed[DLVD] = message_match_count(filters={"state": DLVD}).count
    types = (
        FailureGroup.objects.values_list("exception_type")
        .annotate(n=Sum("count"))
        .order_by("-n", "exception_type")
    )
    groups = FailureGroup.objects.order_by("-ndlv", "-wait", "-count", "fingerprint").values_list(
        "fingerprint", "pattern", "count"
    )[:PICKER_GROUPS]
    return FilterChoices(
        queues=queues,
        states=state_counts(listed),
        exception_types=[(name, int(n)) for name, n in types if name],
        groups=[(fp, pattern, int(n)) for fp, pattern, n in groups],
    )


# A failure group's sparkline: its members by the hour of their latest failure, over this many
# hours up to the newest failure among the groups shown.
SPARK_HOURS = 24


def group_recent(*, groups, hours=SPARK_HOURS, end=None):
    """{fingerprint: [n per hour]}: the groups' members whose latest failure fell in each of the
    `hours` up to `end` (by default the hour of the latest `last_seen` among `groups`). One
    query over the group index's recent part; a member that failed again counts in its newer
    hour only (the index keeps the latest failure)."""
    if not groups:
        return {}
    end = end or max((g.last_seen for g in groups if g.last_seen), default=None)
    if end is None:
        return {g.fingerprint: [0] * hours for g in groups}
    end = end.replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(hours=hours - 1)
    rows = (
        MessageIndex.objects.filter(
            group_id__in=[g.fingerprint for g in groups],
            last_failure_at__gte=start,
            last_failure_at__lt=end + timedelta(hours=1),
        )
        .annotate(hour=TruncHour("last_failure_at"))
        .values_list("group_id", "hour")
        .annotate(n=Count("pk"))
    )
    recent = {g.fingerprint: [0] * hours for g in groups}
    for fingerprint, hour, n in rows:
        recent[fingerprint][int((hour - start).total_seconds() // 3600)] += n
    return recent
