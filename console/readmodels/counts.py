"""Counts by state moved by what changed. Every writer of the read models (a refresh, a
decision's chunk, a purge) knows how many messages left and entered each (queue, state) and moves
the queue counts (QueueStat) by that in its own transaction: a cost that follows the change, not
the number of messages. A full refresh alone counts them whole.

A count that a move would take below zero is a count that was already wrong (a message taken
off a state it was never counted in). It is kept as it is, negative, never clamped: a clamp
turns a passing disorder into a lasting drift and hides it. The move is logged as an error and
reported (`counts_drifted`: an alert), and `manage.py counts_verify` finds and repairs it."""

import logging

from django.db import connection
from django.utils import timezone

from console.readmodels.models import MessageIndex, MessageState, QueueStat
from console.readmodels.signals import counts_drifted

log = logging.getLogger(__name__)


def counts_moved(counts, deltas, *, what=""):
    """{state: n} moved by {state: delta}; as a full count makes them, only the states that hold
    messages, and those a move took below zero (reported: see the module). `what` names the
    counts in the report (a queue, a failure group)."""
    counts = dict(counts)
    for state, delta in deltas.items():
        counts[state] = counts.get(state, 0) + delta
    below = {state: n for state, n in counts.items() if n < 0}
    if below:
        log.error(
            "counts of %s went below zero (%s) after a move by %s: they were wrong before it; "
            "run manage.py counts_verify --repair",
            what or "?",
            below,
            dict(deltas),
        )
        counts_drifted.send(
            sender=QueueStat,
            about=what or "?",
            text=f"Counts of {what or '?'} went below zero: {below}",
            details={"below_zero": below, "moved_by": dict(deltas)},
        )
    return {state: n for state, n in counts.items() if n != 0}


def by_key(deltas):
    """{(key, state): delta} -> {key: {state: delta}}, without the zeros."""
    out = {}
    for (key, state), delta in deltas.items():
        if delta:
            out.setdefault(key, {})[state] = delta
    return out


def queue_counts_move(deltas):
    """Move the queue counts by {(queue, state): delta}. A queue left with no message has no
    counts row, as after a full refresh. Call inside the writer's transaction."""
    by_queue = by_key(deltas)
    if not by_queue:
        return
    now = timezone.now()
    moved, emptied = [], []
    for stat in QueueStat.objects.select_for_update().filter(queue__in=list(by_queue)):
        stat.counts = counts_moved(
            stat.counts, by_queue.pop(stat.queue), what=f"queue {stat.queue}"
        )
        stat.updated_at = now
        (moved if stat.counts else emptied).append(stat)
    QueueStat.objects.bulk_update(moved, ["counts", "updated_at"])
    QueueStat.objects.filter(queue__in=[s.queue for s in emptied]).delete()
    created = [(q, counts_moved({}, d, what=f"queue {q}")) for q, d in by_queue.items()]
    QueueStat.objects.bulk_create(
        [QueueStat(queue=q, counts=c, updated_at=now) for q, c in created if c]
    )


def group_recount_sql(where):
    """A SELECT of (group, state, count, first failure, last failure) of the index's messages
    that `where` keeps (on the index as `i`), for `group_totals`."""
    q = connection.ops.quote_name
    index, states = q(MessageIndex._meta.db_table), q(MessageState._meta.db_table)
    group, mid = q("group_id"), q("message_id")
    return (
        f"SELECT i.{group}, s.{q('state')}, COUNT(*), MIN(i.{q('first_failure_at')}), "  # noqa: S608
        f"MAX(i.{q('last_failure_at')}) FROM {index} i JOIN {states} s ON s.{mid} = i.{mid} "
        f"WHERE {where} GROUP BY i.{group}, s.{q('state')}"
    )


def group_totals(rows):
    """{group: (count, first failure, last failure, {state: n})} summed from the rows of
    `group_recount_sql`."""
    totals = {}
    for group_id, state, count, first, last in rows:
        total = totals.setdefault(group_id, {"count": 0, "first": [], "last": [], "states": {}})
        total["count"] += count
        total["states"][state] = count
        total["first"] += [first] if first is not None else []
        total["last"] += [last] if last is not None else []
    return {
        group_id: (
            t["count"],
            min(t["first"], default=None),
            max(t["last"], default=None),
            t["states"],
        )
        for group_id, t in totals.items()
    }
