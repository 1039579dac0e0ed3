"""Overlaps before sending: which of the messages a scope matches now other open requests hold.

console.decisions.overlaps tells the approver what a frozen set shares with the other open
requests. The person asking should know it before sending too, on the request form itself: the
same comparison (shared_counts), with the scope's matching ids, sorted here by code point as
frozen sets are, in place of a frozen file. Read-only: nothing is frozen or written."""

import pyarrow as pa

from console.browse.selectors import COUNT_CAP
from console.decisions.models import ActionRequest as R
from console.decisions.overlaps import COMPARED_MAX, OPEN, Overlaps, overlaps_with
from console.decisions.scope import scope_queryset
from console.decisions.selectors import STREAMED_SCOPES


def scope_overlaps(*, scope, matching, cap=COUNT_CAP, limit=COMPARED_MAX):
    """What the quarantined messages `scope` matches now share with the newest `limit` open
    requests, as Overlaps; None when it is not told before sending: a lake query's result or an
    earlier request's outcome (read only when frozen), nothing matched, or more than `cap`
    matched (the approver is told once the set is frozen)."""
    if scope.get("kind") in STREAMED_SCOPES or matching is None:
        return None
    if matching.more or not matching.count or matching.count > cap:
        return None
    ids = sorted(scope_queryset(scope).values_list("message_id", flat=True)[: cap + 1])
    if not ids or len(ids) > cap:
        return None
    open_requests = R.objects.filter(status__in=OPEN)
    others = list(open_requests.order_by("-id").only("id", "status", "ids_path")[:limit])
    if not others:
        return Overlaps()
    not_compared = open_requests.count() - len(others) if len(others) == limit else 0
    mine = pa.array(ids, type=pa.string())
    return overlaps_with(lambda: [mine], others, not_compared=not_compared)
