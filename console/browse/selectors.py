"""Reads for the console's screens and API: the messages (the list, by keyset, and how many
match), one message's stored row and history from the lake with pyarrow, and the failure
groups. The counts the read models keep (queues, flows, the dashboard) are console.browse.counts.

Nothing here writes (R12). No query counts a large set exactly: the browser pages by keyset and
counts matches up to COUNT_CAP.
"""

import logging
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

import pyarrow.compute as pc
from django.core import signing
from django.db.models import Q

from console.browse.forms import DEFAULT_SORT, OPEN, PAGE_SIZE
from console.browse.headers import header_map, headers_shown
from console.browse.message_words import is_batch_mate_reason
from console.delivery.models import PoisonEntry
from console.delivery.selectors import HISTORY_FIELDS, message_history
from console.ingest.models import MessageKey
from console.lake.services import lake
from console.notes.lifecycle import (
    fingerprints_in,
    fingerprints_moved,
    muted_fingerprints,
    statuses_attach,
)
from console.notes.models import OPEN as OPEN_GROUP
from console.notes.selectors import group_owner_q, message_owner_q
from console.readmodels.models import (
    FailureGroup,
    MessageIndex,
    MessageState,
    QueueStat,
)
from workers.brokers.dead_letters import dead_letter_details, dead_letter_of
from workers.engine.states import (
    ATTENTION_STATES,
    DLNG,
    DLVD,
    is_failure,
)
from workers.lake.schema import MESSAGE_COLUMNS_WITHOUT_BODY

log = logging.getLogger(__name__)

COUNT_CAP = 10_000
CONVERSATION_SHOWN = 100
GROUPS_SHOWN = 500
TOP_GROUPS = 10

# sort key -> (MessageIndex column, may be NULL). A message that never failed has no
# last_failure_at; those come after every failed one, whichever the direction.
SORTS = {
    "last_failure": ("last_failure_at", True),
    "enqueued": ("enqueued_at", False),
    "delivery_count": ("delivery_count", False),
    "queue": ("queue", False),
}
_DATETIME_COLUMNS = {"last_failure_at", "enqueued_at"}
# The index is two tables (console.readmodels.models): the state, candidate and delivery count
# are MessageState's, with their own indexes, the rest MessageIndex's. A keyset page walks one
# index, so it orders by one table's columns: with a state or candidate filter and none of the
# others, by MessageState's copy of the last failure, failure_at.
_STATE_FILTERS = {"state", "candidate"}
_OWN_FILTERS = {"queue", "group", "exception_type", "sender", "conversation"}
_CURSOR_SALT = "browse.cursor"


class BadCursor(ValueError):
    """A cursor that was not made here, or for another sort."""


# --- The browser ---------------------------------------------------------------------------------


def message_queryset(*, filters, base=None):
    """MessageIndex rows matching the browser's filters (see forms.FILTER_FIELDS). `base`: another
    queryset to filter, MessageState's for filters on its columns only."""
    qs = MessageIndex.objects.all() if base is None else base
    if filters.get("state") == OPEN:
        qs = qs.filter(state__in=ATTENTION_STATES)
    elif filters.get("state"):
        qs = qs.filter(state=filters["state"])
    exact = {
        "queue": "queue",
        "group": "group_id",
        "exception_type": "exception_type",
        "sender": "sender",
        "conversation": "conversation_id",
    }
    for name, column in exact.items():
        if filters.get(name):
            qs = qs.filter(**{column: filters[name]})
    failure = _failure_column(filters)
    if filters.get("since"):
        qs = qs.filter(**{f"{failure}__gte": filters["since"]})
    if filters.get("until"):
        qs = qs.filter(**{f"{failure}__lt": filters["until"]})
    if filters.get("candidate") in ("yes", "no"):
        qs = qs.filter(candidate=filters["candidate"] == "yes")
    if filters.get("owner"):
        qs = qs.filter(message_owner_q(filters["owner"]))
    if filters.get("q"):
        qs = qs.filter(reason__icontains=filters["q"])
    return qs


def _failure_column(filters):
    """The last failure as the table the filters' index is on holds it (both hold it). The
    candidate index holds the candidates only: "not a candidate" (most messages) walks the
    last failure's index of MessageIndex."""
    active = {name for name, value in filters.items() if value}
    if filters.get("candidate") != "yes":
        active.discard("candidate")
    if active & _STATE_FILTERS and not active & _OWN_FILTERS:
        return "failure_at"
    return "last_failure_at"


def _id_column(column):
    """message_id beside `column` in the same table: an index on (column, id) orders by both
    only if both are its table's (SQLite does not see that the join makes them equal)."""
    own = MessageIndex._meta.get_field(column).model is MessageIndex
    return "pk" if own else "message_id"


@dataclass
class MessagePage:
    rows: list
    next_cursor: str | None = None
    prev_cursor: str | None = None
    sort: str = DEFAULT_SORT


def message_page(*, filters, sort=DEFAULT_SORT, after=None, before=None, size=PAGE_SIZE):
    """One page of matching messages, by keyset on (sort column, message_id): never OFFSET, so
    page 1,000 costs what page 1 does. `after` / `before` are cursors from an earlier page;
    BadCursor if one is not ours or was made for another sort."""
    key, desc = _sort_parts(sort)
    column, nullable = SORTS[key]
    if column == "last_failure_at":
        column = _failure_column(filters)
    backward = bool(before)
    cursor = cursor_decode(before or after, sort=sort) if (before or after) else None
    base = message_queryset(filters=filters)
    rows = _keyset_rows(
        base,
        column=column,
        desc=desc,
        nullable=nullable,
        cursor=cursor,
        backward=backward,
        limit=size + 1,
    )
    more = len(rows) > size
    rows = rows[:size]
    if backward:
        rows.reverse()
    page = MessagePage(rows=rows, sort=sort)
    if not rows:
        return page
    first, last = (cursor_encode(r, sort=sort) for r in (rows[0], rows[-1]))
    if backward:
        page.prev_cursor = first if more else None
        page.next_cursor = last
    else:
        page.next_cursor = last if more else None
        page.prev_cursor = first if cursor is not None else None
    return page


def _sort_parts(sort):
    desc = sort.startswith("-")
    key = sort.lstrip("-")
    if key not in SORTS:
        raise BadCursor(f"unknown sort {sort!r}")
    return key, desc


def _keyset_rows(base, *, column, desc, nullable, cursor, backward, limit):
    """Up to `limit` rows from the cursor on, in the direction of travel.

    The full order is the rows with a value, by (column, message_id), then (for a nullable
    column) the rows without one, by message_id. Each part is its own query, so each can walk an
    index that starts with its filter column and stop after `limit` rows.
    """
    descending = desc != backward  # walking backwards flips the order of the query
    sign = "-" if descending else ""
    mid = _id_column(column)
    valued = base.filter(**{f"{column}__isnull": False}) if nullable else base
    valued = valued.order_by(f"{sign}{column}", f"{sign}{mid}")
    empty = base.filter(**{f"{column}__isnull": True}).order_by(f"{sign}{mid}")
    onward = "lt" if descending else "gt"  # the lookup that moves in the direction of travel

    if cursor is None:
        parts = [valued, empty] if nullable else [valued]
    else:
        value, message_id = cursor
        if value is None:
            if not nullable:
                raise BadCursor("cursor has no value for a column that always has one")
            rest = empty.filter(**{f"{mid}__{onward}": message_id})
            parts = [rest, valued] if backward else [rest]
        else:
            # (column, id) past (value, id): written so the first condition bounds an index scan.
            past = valued.filter(
                Q(**{f"{column}__{onward}e": value})
                & (Q(**{f"{column}__{onward}": value}) | Q(**{f"{mid}__{onward}": message_id}))
            )
            parts = [past] if backward or not nullable else [past, empty]
    rows = []
    for part in parts:
        rows.extend(part[: limit - len(rows)])
        if len(rows) >= limit:
            break
    return rows


def cursor_encode(row, *, sort):
    column, _ = SORTS[sort.lstrip("-")]
    value = getattr(row, column)
    if isinstance(value, datetime):
        value = value.isoformat()
    return signing.dumps([sort, value, row.message_id], salt=_CURSOR_SALT, compress=True)


def cursor_decode(token, *, sort):
    """(sort value, message_id) of a cursor; BadCursor if it was tampered with or is stale."""
    try:
        made_for, value, message_id = signing.loads(token, salt=_CURSOR_SALT)
    except (signing.BadSignature, ValueError, TypeError):
        raise BadCursor("this page link is not valid; start again from the first page") from None
    if made_for != sort:
        raise BadCursor("this page link was made for another sort order")
    column, _ = SORTS[sort.lstrip("-")]
    if value is not None and column in _DATETIME_COLUMNS:
        value = datetime.fromisoformat(value)
    return value, message_id


@dataclass(frozen=True)
class MatchCount:
    count: int
    more: bool  # there are more than `count` (the count hit the cap)
    source: str  # "index" (counted, capped) or "stats" (the read models' counts, last refresh)

    def __str__(self):
        return f"{self.count:,}+" if self.more else f"{self.count:,}"


def message_match_count(*, filters, cap=None):
    """How many messages match, without counting a large set: the read models' own counts when
    the filter is a failure group or a queue and state, otherwise a count of at most cap + 1."""
    cap = COUNT_CAP if cap is None else cap
    active = set(filters)
    state = filters.get("state")
    wanted = ATTENTION_STATES if state == OPEN else (state,)
    if active in ({"group"}, {"group", "state"}):
        group = FailureGroup.objects.filter(fingerprint=filters["group"]).first()
        if group is None:
            return MatchCount(0, False, "stats")
        states = group.states or {}
        if state:
            return MatchCount(sum(int(states.get(s, 0)) for s in wanted), False, "stats")
        return MatchCount(int(sum(states.values())) if states else group.count, False, "stats")
    if active == {"queue", "state"} and state != DLVD:
        # Every message not DLVD is indexed, so the queue's count in that state is the match.
        stat = QueueStat.objects.filter(queue=filters["queue"]).first()
        counts = (stat.counts or {}) if stat else {}
        return MatchCount(sum(int(counts.get(s, 0)) for s in wanted), False, "stats")
    if active == {"state"} and state != DLVD:
        # The same, over every queue: what the dashboard's cards say.
        counts = QueueStat.objects.values_list("counts", flat=True)
        return MatchCount(
            sum(int((c or {}).get(s, 0)) for c in counts for s in wanted), False, "stats"
        )
    base = None
    if active <= _STATE_FILTERS | {"since", "until"} and _failure_column(filters) == "failure_at":
        # Only MessageState's columns: its narrow rows are counted (one per indexed message),
        # without the join to MessageIndex that would read a wide row for each.
        base = MessageState.objects.all()
    counted = message_queryset(filters=filters, base=base).values("pk")[: cap + 1].count()
    return MatchCount(min(counted, cap), counted > cap, "index")


# --- One message ---------------------------------------------------------------------------------

_STORED_COLUMNS = MESSAGE_COLUMNS_WITHOUT_BODY


@dataclass
class MessageView:
    message_id: str
    indexed: MessageIndex | None
    stored: dict  # its row in the lake's messages dataset (body only when asked for)
    history: list = field(default_factory=list)
    latest: dict = field(default_factory=dict)  # its latest event
    failure: dict = field(default_factory=dict)  # its latest failure event

    def _pick(self, event_key, index_key, stored_key=None, default=None):
        """The latest event's value, else the index row's, else the stored row's."""
        if self.latest.get(event_key) is not None:
            return self.latest[event_key]
        if self.indexed is not None:
            return getattr(self.indexed, index_key)
        if stored_key and self.stored.get(stored_key) is not None:
            return self.stored[stored_key]
        return default

    @property
    def state(self):
        return self._pick("to_state", "state", default="")

    @property
    def queue(self):
        return self._pick("queue", "queue", "queue", default="")

    @property
    def original_queue(self):
        if self.stored.get("queue"):
            return self.stored["queue"]
        return self.indexed.original_queue if self.indexed else ""

    @property
    def in_flight(self):
        """R1: while a run holds the message (DLNG), which run and since when; else None."""
        if self.latest.get("to_state") != DLNG:
            return None
        return {"run": self.latest.get("run_id") or "", "since": self.latest.get("at")}

    @property
    def delivery_count(self):
        return self._pick("delivery_count", "delivery_count", default=0)

    @property
    def candidate(self):
        return bool(self._pick("candidate", "candidate", default=False))

    @property
    def reason(self):
        """Its latest failure's reason (the index's shortened copy when the history has none)."""
        if self.failure.get("reason"):
            return self.failure["reason"]
        return self.indexed.reason if self.indexed is not None else ""

    @cached_property
    def header_map(self):
        """Its headers by name, for the readers of named ones (bounded: console.browse.headers)."""
        return header_map(self.stored.get("headers"))

    @cached_property
    def headers(self):
        """What is shown of its headers: at most HEADERS_SHOWN, cut (console.browse.headers)."""
        return headers_shown(self.stored.get("headers"))

    @property
    def dead_letter(self):
        """Why the message died before it reached Antidote, as (label, value) rows, from the
        dead-letter record of its headers (RabbitMQ's x-death, Kafka's); () if it has none."""
        return dead_letter_details(self.header_map)


def _body_location(message_id):
    """(lake directory, body version) of a message's current body, or None if unknown."""
    indexed = MessageIndex.objects.filter(message_id=message_id).first()
    if indexed is not None:
        return indexed, indexed.body_path, indexed.body_version
    key = MessageKey.objects.select_related("commit").filter(message_id=message_id).first()
    if key is None:
        return None
    # Not indexed (delivered without failing, or not refreshed yet): its body as received.
    return None, key.commit.path, 1


def _stored_row(*, path, message_id, version, with_body):
    columns = _STORED_COLUMNS + (["body"] if with_body else [])
    store = lake()
    by_id = pc.field("message_id") == message_id
    try:
        rows = store.read_arrow(
            "messages", [path], columns=columns, filter=by_id & (pc.field("version") == version)
        ).to_pylist()
        if not rows:
            # The index may lag behind an edit: show the newest version the directory holds.
            rows = store.read_arrow("messages", [path], columns=columns, filter=by_id).to_pylist()
            rows.sort(key=lambda r: r["version"])
    except FileNotFoundError:
        # Purged (R15) or compacted away since the last refresh: the page says the body is gone.
        log.warning(
            "message %r: its body directory %s is not in the lake",
            message_id,
            path,
            extra={"message_id": message_id},
        )
        return {}
    return rows[-1] if rows else {}


def _is_failure(event):
    return is_failure(event.get("from_state"), event.get("to_state"), event.get("attempt"))


def message_view(*, message_id, with_body=False):
    """A message's index row, stored metadata (and body if asked), and history, or None."""
    location = _body_location(message_id)
    if location is None:
        return None
    indexed, path, version = location
    stored = _stored_row(path=path, message_id=message_id, version=version, with_body=with_body)
    history = message_history(message_id=message_id)
    failure = next((e for e in reversed(history) if _is_failure(e)), {})
    return MessageView(
        message_id=message_id,
        indexed=indexed,
        stored=stored,
        history=history,
        latest=history[-1] if history else {},
        failure=failure,
    )


def message_detail(*, message_id):
    """What the API tells of one message: metadata, current state, why it is in it, and its
    whole history; None if it is unknown. The same reads as the detail page."""
    view = message_view(message_id=message_id)
    if view is None:
        return None
    latest, stored = view.latest, view.stored
    # Why it is in its state now: the latest event that is neither ingest nor delivery.
    why = next(
        (
            e
            for e in reversed(view.history)
            if e["from_state"] is not None and e["to_state"] not in (DLNG, DLVD)
        ),
        {},
    )
    return {
        "id": message_id,
        "queue": view.queue,
        "original_queue": view.original_queue,
        "state": latest.get("to_state"),
        "in_flight": view.in_flight,
        "delivery_count": view.delivery_count,
        "blacklist_candidate": view.candidate,
        "batch_limit": latest.get("batch_limit") or None,
        "next_attempt_at": latest.get("next_attempt_at"),
        "reason": why.get("reason"),
        "exception_type": view.failure.get("exception_type"),
        "on_poison_list": PoisonEntry.objects.filter(message_id=message_id).exists(),
        "body_sha256": stored.get("body_sha256"),
        "body_size": stored.get("body_size"),
        "content_type": stored.get("content_type"),
        "headers": view.headers,
        "dead_letter": _dead_letter_fields(view.header_map),
        "conversation_id": stored.get("conversation_id"),
        "sender": stored.get("sender"),
        "enqueued_at": stored.get("enqueued_at"),
        "history": [{f: e[f] for f in HISTORY_FIELDS} for e in view.history],
    }


def _dead_letter_fields(headers):
    record = dead_letter_of(headers)
    if record is None:
        return None
    return {
        "kind": record.kind,
        "origin": record.origin,
        "exception_type": record.exception_type,
        "reason": record.reason,
        "stack": record.stack,
        "original_queue": record.original_queue,
        "original_exchange": record.original_exchange,
        "original_routing_keys": list(record.original_routing_keys),
        "count": record.count,
        "details": {label: value for label, value in record.details},
    }


def message_body(*, message_id):
    """(body bytes, content type) of a message's current body, or None if unknown."""
    location = _body_location(message_id)
    if location is None:
        return None
    _, path, version = location
    stored = _stored_row(path=path, message_id=message_id, version=version, with_body=True)
    if not stored:
        return None
    return stored["body"] or b"", stored.get("content_type") or ""


def message_headers_text(*, message_id):
    """A message's headers as stored (JSON text, "{}" when it has none or its row is gone), for
    those who want them whole; None if the message is unknown."""
    location = _body_location(message_id)
    if location is None:
        return None
    _, path, version = location
    stored = _stored_row(path=path, message_id=message_id, version=version, with_body=False)
    return stored.get("headers") or "{}"


def message_conversation(*, conversation_id, exclude=None, limit=CONVERSATION_SHOWN):
    """The indexed messages of a conversation, oldest first (delivered ones that never failed are
    not indexed)."""
    if not conversation_id:
        return []
    qs = MessageIndex.objects.filter(conversation_id=conversation_id).order_by(
        "enqueued_at", "message_id"
    )
    if exclude:
        qs = qs.exclude(message_id=exclude)
    return list(qs[:limit])


# --- Failure groups ------------------------------------------------------------------------------


def group_list(
    *, queue=None, resolved=False, owner=None, status=None, muted=True, limit=GROUPS_SHOWN
):
    """Failure groups by what needs attention now: quarantined members, then waiting ones. Groups
    none of whose members needs anyone (all delivered, failed or ended) only with `resolved`.
    `owner`: a cleaned owner filter (console.notes.selectors.owner_filter_clean); `status`: those
    in one state of their lifecycle (console.notes.lifecycle); `muted` False leaves out the
    ignored ones (the dashboard's top list). Each group has its `.status`."""
    qs = _groups_needing(resolved=resolved)
    if queue:
        qs = qs.filter(queue=queue)
    if owner:
        qs = qs.filter(group_owner_q(owner))
    if status == OPEN_GROUP:
        qs = qs.exclude(fingerprint__in=fingerprints_moved().exclude(state=OPEN_GROUP))
    elif status:
        qs = qs.filter(fingerprint__in=fingerprints_in(status))
    if not muted:
        qs = qs.exclude(fingerprint__in=muted_fingerprints())
    return statuses_attach(qs[:limit])


def _groups_needing(*, resolved=False):
    qs = FailureGroup.objects.order_by("-ndlv", "-wait", "-count", "fingerprint")
    if not resolved:
        qs = qs.filter(Q(ndlv__gt=0) | Q(wait__gt=0))
    return qs


def groups_muted_count():
    """How many muted groups still have members that need someone: the dashboard's "muted"."""
    return _groups_needing().filter(fingerprint__in=muted_fingerprints()).count()


def groups_apart(groups):
    """(real failure groups, crash batch-mates' groups), each in the order given. A crash flags
    every unfinished message of its batch "in flight when a worker crashed" (R7, R8): one such
    group can hold hundreds of messages that did nothing wrong, waiting to be tried alone, and
    would hide the failures that have a cause of their own."""
    real, waiting = [], []
    for group in groups:
        (waiting if is_batch_mate_reason(group.pattern) else real).append(group)
    return real, waiting


def group_get(*, fingerprint):
    """The failure group, with its `.status`, or None."""
    group = FailureGroup.objects.filter(fingerprint=fingerprint).first()
    return statuses_attach([group])[0] if group is not None else None
