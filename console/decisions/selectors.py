"""Reads for the decision screens and API: action requests, their audit entries, what a scope
matches now, and the error notifications sent to senders (the lake's `notifications` dataset)."""

from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc
from django.core import signing
from django.db.models import Count
from django.utils import timezone

from console.audit.models import AuditEntry
from console.browse.selectors import COUNT_CAP, MatchCount
from console.decisions.models import ActionChunk, ActionRequest
from console.decisions.scope import scope_queryset
from console.lake.selectors import lake_paths
from console.lake.services import lake
from console.permissions import APPROVE_REQUESTS
from console.queues.models import BrokerSource
from console.readmodels.models import FailureGroup
from workers.lake.schema import TS

ACTIVE = (ActionRequest.APPROVED, ActionRequest.RUNNING, ActionRequest.CANARY)
# Scopes that are not an index query: their ids are read when they are frozen.
STREAMED_SCOPES = ("lake_query", "failed_again")
_NOTIFICATION_CURSOR_SALT = "decisions.notifications.cursor"


class BadCursor(ValueError):
    """A page link that was not made here."""


# --- Requests -----------------------------------------------------------------------------------


@dataclass
class RequestPage:
    rows: list
    next_before: int | None  # `before` for the next (older) page


def request_list(*, user, status="", show="", before=None, limit=50):
    """Requests, newest first, a page at a time by id. `show`: "waiting" (pending, someone
    else's, and `user` may approve) or "mine"."""
    qs = ActionRequest.objects.select_related("requester", "decided_by").order_by("-id")
    if status:
        qs = qs.filter(status=status)
    if show == "mine":
        qs = qs.filter(requester=user)
    elif show == "waiting":
        if not user.has_perm(APPROVE_REQUESTS):
            return RequestPage(rows=[], next_before=None)
        qs = qs.filter(status=ActionRequest.PENDING).exclude(requester=user)
    if before:
        qs = qs.filter(id__lt=before)
    rows = list(qs[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    return RequestPage(rows=rows, next_before=rows[-1].id if more else None)


def request_waiting_count(*, user):
    """How many requests wait for `user`'s approval (0 for someone who may not approve)."""
    if not user.has_perm(APPROVE_REQUESTS):
        return 0
    return (
        ActionRequest.objects.filter(status=ActionRequest.PENDING).exclude(requester=user).count()
    )


def break_glass_unreviewed(*, now=None, limit=50):
    """Requests executed by break-glass (R17) whose review is still to come, the one due first
    first (the dashboard's panel); each with `review_overdue`, its review past due at `now`."""
    now = now or timezone.now()
    rows = list(
        ActionRequest.objects.select_related("break_glass_by")
        .filter(break_glass_at__isnull=False, reviewed_at__isnull=True)
        .order_by("review_due_at", "id")[:limit]
    )
    for row in rows:
        row.review_overdue = row.review_due_at <= now
    return rows


def request_get(*, request_id):
    return (
        ActionRequest.objects.select_related(
            "requester", "decided_by", "cancelled_by", "break_glass_by", "reviewed_by"
        )
        .filter(id=request_id)
        .first()
    )


def request_edit_failures(*, request_id, limit=100):
    """The first `limit` members a bulk edit could not edit, [{"message_id", "reason"}], in
    chunk order (each chunk keeps its first ones: console.decisions.chunks)."""
    found = []
    rows = ActionChunk.objects.filter(request_id=request_id).order_by("index")
    for failures in rows.values_list("failures", flat=True):
        found.extend(failures or [])
        if len(found) >= limit:
            break
    return found[:limit]


def request_audit(*, request_id):
    """The request's audit entries, oldest first."""
    return list(AuditEntry.objects.filter(target_type="request", target_id=str(request_id)))


def scope_match_count(*, scope, cap=COUNT_CAP):
    """How many quarantined messages a scope matches now (before it is frozen), counted up to
    `cap`; None for a lake query's result or an earlier request's outcome, which are read only
    when the scope is frozen. ScopeError for a bad scope."""
    if scope.get("kind") in STREAMED_SCOPES:
        return None
    qs = scope_queryset(scope)
    counted = qs.values("pk")[: cap + 1].count()
    return MatchCount(min(counted, cap), counted > cap, "index")


def scope_queues(*, scope, matching, limit=10):
    """[(queue, quarantined messages)] of a scope, most first, when `matching` (its count) is
    exact: over the count's cap a breakdown would read every row. None when it is not told."""
    if matching is None or matching.more or not matching.count:
        return None
    rows = (
        scope_queryset(scope)
        .values("queue")
        .annotate(n=Count("pk"))
        .order_by("-n", "queue")
        .values_list("queue", "n")
    )
    return list(rows[:limit])


def scope_group(*, scope):
    """The failure group a group scope names (for its pattern), or None."""
    if scope.get("kind") != "group":
        return None
    return FailureGroup.objects.filter(fingerprint=scope.get("group")).first()


def group_patterns(*, fingerprints):
    """{fingerprint: pattern} of the failure groups named (those that still exist)."""
    return dict(
        FailureGroup.objects.filter(fingerprint__in=fingerprints).values_list(
            "fingerprint", "pattern"
        )
    )


def scope_redrive_sources(*, scope, limit=20):
    """The broker sources whose messages a scope holds and that can send them back where they
    came from (a redrive queue is set): what "reprocess to its original RabbitMQ queue" (or NATS
    subject, or Redis stream) offers. Read from the queues the scope's quarantined messages are
    in; none for a lake query or an earlier request's outcome."""
    if scope.get("kind") in STREAMED_SCOPES:
        return []
    queues = scope_queryset(scope).values("queue").distinct()[:limit]
    return list(
        BrokerSource.objects.filter(queue__name__in=queues, redrive_queue__isnull=False)
        .select_related("queue", "redrive_queue")
        .order_by("name")
    )


# --- Error notifications ------------------------------------------------------------------------

_NOTIFICATION_FILTERS = {"sender": "sender", "conversation": "conversation_id"}


@dataclass
class NotificationPage:
    rows: list
    next_before: str | None


def _cursor_encode(row):
    return signing.dumps([row["at"].isoformat(), row["message_id"]], salt=_NOTIFICATION_CURSOR_SALT)


def _cursor_decode(token):
    try:
        at, message_id = signing.loads(token, salt=_NOTIFICATION_CURSOR_SALT)
        return datetime.fromisoformat(at), str(message_id)
    except (signing.BadSignature, ValueError, TypeError):
        raise BadCursor("this page link is not valid; start again from the first page") from None


def notification_list(*, filters, limit=50, before=None):
    """Error notifications sent to senders (R13, end with error), newest first, `limit` at a
    time; `before` is the previous page's `next_before`. BadCursor for a cursor not made here.

    Reads every committed notifications directory with pyarrow, filtered and sorted in memory:
    fine while there are a few hundred thousand notifications, not for many millions."""
    expression = pc.field("at").is_valid()

    def _and(term):
        return expression & term

    for name, column in _NOTIFICATION_FILTERS.items():
        if filters.get(name):
            expression = _and(pc.field(column) == filters[name])
    if filters.get("message_id"):
        expression = _and(pc.field("message_id") == filters["message_id"])
    if before:
        at, message_id = _cursor_decode(before)
        at = pa.scalar(at, type=TS)
        expression = _and(
            (pc.field("at") < at) | ((pc.field("at") == at) & (pc.field("message_id") < message_id))
        )
    table = lake().read_arrow(
        "notifications", lake_paths(dataset="notifications"), filter=expression
    )
    if table.num_rows:
        order = pc.sort_indices(
            table, sort_keys=[("at", "descending"), ("message_id", "descending")]
        )
        table = table.take(order[: limit + 1])
    rows = table.to_pylist()
    more = len(rows) > limit
    rows = rows[:limit]
    return NotificationPage(rows=rows, next_before=_cursor_encode(rows[-1]) if more else None)
