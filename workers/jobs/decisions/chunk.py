"""One chunk's decision, pure pyarrow over its rows (`decide_chunk`): the decision events of the
members still NDLV, the siblings' ENDED events and the senders' notifications; an edited body's
new version (`edited_message`); a request's redrive target carried in new versions
(`retargeted_messages`). A chunk is a few thousand rows: a Spark job per chunk would cost more
than the work."""

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workers.engine import states as S
from workers.engine.actions import END, REPROCESS, TO_STATE, VERBS
from workers.jobs.conversations import CONVERSATION_STEP_BASE
from workers.jobs.decisions.plan import latest_by_id
from workers.jobs.state import EVENT_COLUMNS
from workers.lake.schema import EVENT_SCHEMA, MESSAGE_SCHEMA, NOTIFICATION_SCHEMA, STATE_FIELDS


def unknown_ids(members: pa.Table) -> pa.Array:
    """The ids of `members` with no state: the ledger (or the index) does not know them."""
    return members.filter(pc.is_null(members.column("to_state"))).column("message_id")


def with_missing(members: pa.Table, chunk_ids: pa.Table) -> pa.Table:
    """The chunk's members plus a row of nulls (but its id) for each of the chunk's frozen ids
    the ledger did not know."""
    known = pc.is_in(chunk_ids.column("message_id"), value_set=members.column("message_id"))
    missing = chunk_ids.filter(pc.invert(known)).column("message_id")
    if not len(missing):
        return members
    nulls = {
        name: pa.nulls(len(missing), members.schema.field(name).type)
        for name in members.column_names
    }
    nulls["message_id"] = missing
    return pa.concat_tables([members, pa.table(nulls, schema=members.schema)])


# --- One chunk (pyarrow) -------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """What a request decides, as the events will record it."""

    action: str
    request_id: int
    epoch: int
    actor: str  # who asked
    reason: str  # who, which request, who approved, the comment
    target_queue: str = ""
    body_version: int | None = None  # an edited body's new version
    error_code: str = ""
    error_description: str = ""


def decision_reason(*, action, request_id, approver, comment):
    """What the ledger says of a decided message: what was done, by which request, who approved
    it (None: nobody needed to), and the requester's comment; cut to what the ledger keeps."""
    who = f"request {request_id}" + (f", approved by {approver}" if approver else "")
    return f"{VERBS[action]} ({who}): {comment}"[:2000]


def chunk_message_ids(members: pa.Table, siblings: pa.Table | None):
    """Every message a chunk may decide (its members and, for an end with error, its
    siblings): whose events committed since the plan the chunk must see."""
    ids = members.column("message_id")
    if siblings is not None and siblings.num_rows:
        ids = pa.concat_arrays(
            [ids.combine_chunks(), siblings.column("message_id").combine_chunks()]
        )
    return ids


@dataclass
class ChunkOutcome:
    events: pa.Table
    notifications: pa.Table
    decided: pa.Table  # message_id, from queue, to queue, from state, to state: for the views
    decided_at: datetime | None = None
    done: int = 0
    skipped: int = 0
    failed: int = 0
    siblings_ended: int = 0
    skipped_ids: list = field(default_factory=list)


def with_newer(plan: pa.Table, newer: pa.Table | None) -> pa.Table:
    """The plan's rows with the state of any message that changed after the plan was made (events
    committed since, by others) replaced by its newer state."""
    if newer is None or newer.num_rows == 0 or plan.num_rows == 0:
        return plan
    latest = latest_by_id(newer.select(EVENT_COLUMNS))
    changed = pc.is_in(plan.column("message_id"), value_set=latest.column("message_id"))
    if not pc.any(changed).as_py():
        return plan
    stale = plan.filter(changed)
    keep = plan.filter(pc.invert(changed))
    extra = [c for c in plan.column_names if c not in EVENT_COLUMNS]
    fresh = stale.select(["message_id", *extra]).join(latest, keys="message_id", join_type="inner")
    return pa.concat_tables([keep, fresh.select(plan.column_names).cast(plan.schema)])


def decide_chunk(
    members: pa.Table, siblings: pa.Table | None, decision: Decision, *, chunk: int, at: datetime
) -> ChunkOutcome:
    """The decision events of one chunk: members still NDLV are decided, the others skipped
    ("changed since the request"), ids the ledger does not know fail; for an end with error, the
    senders' notifications and the siblings still unfinished, ENDED."""
    members = members.sort_by("message_id")
    known = pc.is_valid(members.column("to_state"))
    is_ndlv = pc.and_(known, pc.equal(members.column("to_state"), S.NDLV))
    acted = members.filter(is_ndlv)
    outcome = ChunkOutcome(
        events=EVENT_SCHEMA.empty_table(),
        notifications=NOTIFICATION_SCHEMA.empty_table(),
        decided=_decided_schema().empty_table(),
        decided_at=at,
        done=acted.num_rows,
        failed=members.num_rows - pc.sum(known.cast(pa.int64())).as_py() if members.num_rows else 0,
    )
    outcome.skipped = members.num_rows - outcome.done - outcome.failed
    outcome.skipped_ids = (
        members.filter(pc.and_(known, pc.invert(is_ndlv))).column("message_id").to_pylist()[:100]
    )
    parts = [_member_events(acted, decision, chunk=chunk, at=at)]
    decided = [_decided(acted, parts[0])]
    if decision.action == END:
        outcome.notifications = _notifications(acted, decision, at=at)
        if siblings is not None and siblings.num_rows:
            # Only conversations whose first decided member was decided in this chunk.
            open_now = pc.is_in(siblings.column("to_state"), value_set=pa.array(S.OPEN_STATES))
            started = pc.is_in(siblings.column("ended_by"), value_set=acted.column("message_id"))
            ending = siblings.filter(pc.and_(open_now, started)).sort_by("message_id")
            if ending.num_rows:
                parts.append(_sibling_events(ending, decision, chunk=chunk, at=at))
                decided.append(_decided(ending, parts[-1]))
                outcome.siblings_ended = ending.num_rows
    outcome.events = pa.concat_tables(parts)
    outcome.decided = pa.concat_tables(decided)
    return outcome


def _column(value, n, type_):
    if value is None:
        return pa.nulls(n, type_)
    return pa.repeat(pa.scalar(value, type=type_), n)


def _event_table(columns, n):
    return pa.table(
        {f.name: columns.get(f.name, pa.nulls(n, f.type)) for f in EVENT_SCHEMA},
        schema=EVENT_SCHEMA,
    )


def _member_events(acted, decision, *, chunk, at):
    n = acted.num_rows
    changes = {}
    if decision.action == REPROCESS:
        # R13: back to TBDL, in its queue or the one asked for, count reset, flag cleared, and
        # no batch limit left over from R8.
        if decision.target_queue:
            changes["queue"] = _column(decision.target_queue, n, pa.string())
        changes["delivery_count"] = _column(0, n, pa.int32())
        changes["candidate"] = _column(False, n, pa.bool_())
        changes["batch_limit"] = _column(0, n, pa.int32())
        if decision.body_version is not None:
            changes["body_version"] = _column(decision.body_version, n, pa.int32())
    return _decision_events(
        acted,
        decision,
        to_state=TO_STATE[decision.action],
        first_step=chunk << 32,
        at=at,
        reason=_column(decision.reason, n, pa.string()),
        changes=changes,
    )


def _sibling_events(ending, decision, *, chunk, at):
    return _decision_events(
        ending,
        decision,
        to_state=S.ENDED,
        # After every member's step: a conversation's others end after the member that ends it.
        first_step=CONVERSATION_STEP_BASE + (chunk << 32),
        at=at,
        reason=pc.binary_join_element_wise(
            f"{S.REASON_CONVERSATION_ENDED} (message ", ending.column("ended_by"), ")", ""
        ),
    )


# What a decision event keeps of the message's state (workers.lake.schema.STATE_FIELDS but
# next_attempt_at: a decided message is not scheduled any more).
_KEPT = [name for name in STATE_FIELDS if name != "next_attempt_at"]


def request_run_id(request_id):
    """The run_id of a request's events and notifications (and of its execution's log lines)."""
    return f"request:{request_id}"


def _decision_events(rows, decision, *, to_state, first_step, at, reason, changes=None):
    """The events of a request taking `rows` from their current state to `to_state`, numbered
    from `first_step` in their order; `changes`: columns that replace the state they keep."""
    n = rows.num_rows
    columns = {
        "message_id": rows.column("message_id"),
        "epoch": _column(decision.epoch, n, pa.int64()),
        "step": pa.array(np.arange(first_step, first_step + n, dtype=np.int64)),
        "at": _column(at, n, EVENT_SCHEMA.field("at").type),
        "from_state": rows.column("to_state"),
        "to_state": _column(to_state, n, pa.string()),
        "attempt": _column(0, n, pa.int32()),
        **{name: rows.column(name) for name in _KEPT},
        "actor": _column(decision.actor, n, pa.string()),
        "run_id": _column(request_run_id(decision.request_id), n, pa.string()),
        "reason": reason,
        **(changes or {}),
    }
    return _event_table(columns, n)


def _notifications(acted, decision, *, at):
    n = acted.num_rows
    return pa.table(
        {
            "message_id": acted.column("message_id"),
            "conversation_id": acted.column("conversation_id"),
            "sender": acted.column("sender"),
            "code": _column(decision.error_code, n, pa.string()),
            "description": _column(decision.error_description, n, pa.string()),
            "at": _column(at, n, NOTIFICATION_SCHEMA.field("at").type),
            "run_id": _column(request_run_id(decision.request_id), n, pa.string()),
        },
        schema=NOTIFICATION_SCHEMA,
    )


def _decided_schema():
    return pa.schema(
        [
            ("message_id", pa.string()),
            ("from_queue", pa.string()),
            ("from_state", pa.string()),
            ("queue", pa.string()),
            ("to_state", pa.string()),
        ]
    )


def _decided(before, events):
    """Who moved from which queue and state to which: what the read models need."""
    return pa.table(
        {
            "message_id": events.column("message_id"),
            "from_queue": before.column("queue"),
            "from_state": before.column("to_state"),
            "queue": events.column("queue"),
            "to_state": events.column("to_state"),
        },
        schema=_decided_schema(),
    )


# --- An edited body ------------------------------------------------------------------------------


def edited_message(
    current: pa.Table, body: bytes | None, *, headers=None, version, redrive_target=None
) -> pa.Table:
    """R13: one message edited, as a new version, the one it has kept (`current`: its row of the
    messages dataset, at the version it has now): the same message with the new body (None: its
    body as it is) and its hash and size, the new headers (JSON text; None: as they are), and
    the request's own redrive target (JSON text, or None)."""
    row = current.slice(0, 1).to_pylist()[0]
    body = row["body"] if body is None else body
    row |= {
        "version": version,
        "body": body,
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "body_size": len(body),
        "redrive_target": redrive_target,
    }
    if headers is not None:
        row["headers"] = headers
    return pa.Table.from_pylist([row], schema=MESSAGE_SCHEMA)


# --- A request's own redrive target ------------------------------------------------------------


def retargeted_messages(rows: pa.Table, target_json) -> pa.Table:
    """New versions of the messages `rows` (their current version's row each, MESSAGE_SCHEMA)
    whose `redrive_target` is `target_json` (None: none), for those whose current version does
    not already say so, sorted by id. Body, headers and everything else are kept: a sink reads
    the target of the version it delivers, and only a request writes one (R18)."""
    rows = rows.sort_by("message_id")
    keep, seen = [], set()
    for i, (message_id, current) in enumerate(
        zip(
            rows.column("message_id").to_pylist(),
            rows.column("redrive_target").to_pylist(),
            strict=True,
        )
    ):
        # One row per message: a version found in two commits is the same version.
        if message_id in seen:
            continue
        seen.add(message_id)
        if current != target_json:
            keep.append(i)
    out = rows.take(pa.array(keep, pa.int64()))
    out = out.set_column(
        out.schema.get_field_index("redrive_target"),
        "redrive_target",
        pa.array([target_json] * out.num_rows, pa.string()),
    )
    version = pc.add(out.column("version"), pa.scalar(1, pa.int32())).cast(pa.int32())
    out = out.set_column(out.schema.get_field_index("version"), "version", version)
    return out.cast(MESSAGE_SCHEMA)


def with_body_versions(events: pa.Table, versions: pa.Table) -> pa.Table:
    """`events` with the body version of the messages in `versions` (message_id, version)
    replaced by theirs: the version a retarget wrote."""
    if versions.num_rows == 0 or events.num_rows == 0:
        return events
    found = pc.index_in(events.column("message_id"), value_set=versions.column("message_id"))
    new = pc.take(versions.column("version"), found)
    column = pc.if_else(pc.is_valid(found), new, events.column("body_version"))
    return events.set_column(
        events.schema.get_field_index("body_version"), "body_version", column.cast(pa.int32())
    )
