"""Reads of a message's lifecycle from the lake, with pyarrow (no Spark on the request path), and
of the poison list. Reading never changes anything (R12)."""

import pyarrow as pa

from console.delivery.models import PoisonChange, PoisonEntry
from console.lake.selectors import lake_history_inputs
from console.lake.services import lake
from workers.lake.history import read_message

HISTORY_FIELDS = (
    "at",
    "from_state",
    "to_state",
    "queue",
    "attempt",
    "delivery_count",
    "candidate",
    "next_attempt_at",
    "actor",
    "run_id",
    "reason",
    "exception_type",
    "stack",
)


def message_history(*, message_id):
    """Every event of one message, oldest first: from the history generations, one bucket file
    each, and the few events commits after them (workers.lake.history). Its time does not grow
    with the number of events commits: the compaction keeps both counts small."""
    inputs = lake_history_inputs()
    store = lake()
    folded = read_message([(store.path(g.path), g.buckets) for g in inputs.generations], message_id)
    recent = store.read_message("events", [p for _, p, _ in inputs.events], message_id)
    # In the order of the commits, then by (epoch, step): a stable sort keeps commit order among
    # equal keys, as a read of every events commit in id order did.
    rows = pa.concat_tables([folded, recent]).to_pylist()
    rows.sort(key=lambda r: (r["epoch"], r["step"]))
    return rows


# --- The poison list (R9), as /api/v1/poison-list reads it ---------------------------------------


def poison_page(*, after=None, limit):
    """Entries by message id, the `limit` after `after`; returns (entries, the `after` of the
    next page or None)."""
    entries = PoisonEntry.objects.order_by("message_id")
    if after is not None:
        entries = entries.filter(message_id__gt=after)
    rows = list(entries[: limit + 1])
    if len(rows) > limit:
        return rows[:limit], rows[limit - 1].message_id
    return rows, None


def poison_changes(*, since, limit):
    """The changes after cursor `since`, oldest first, at most `limit`; returns (changes, the
    cursor to ask from next, whether there are more)."""
    rows = list(PoisonChange.objects.filter(id__gt=since).order_by("id")[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, rows[-1].id if rows else since, more


def poison_check(*, ids, hashes):
    """Which of these ids and body hashes are on the list: ({message_id: reason},
    {body_sha256: reason}), a hash with the reason of the newest entry that carries it."""
    listed = dict(
        PoisonEntry.objects.filter(message_id__in=list(ids)).values_list("message_id", "reason")
    )
    bodies = dict(
        PoisonEntry.objects.filter(body_sha256__in=[h for h in hashes if h])
        .order_by("id")
        .values_list("body_sha256", "reason")
    )
    return listed, bodies


def poison_entry_get(*, message_id):
    return PoisonEntry.objects.filter(message_id=message_id).first()
