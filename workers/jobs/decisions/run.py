"""One chunk of a request, from what the console loaded to what it must write: the one entry
point the console calls for each chunk (`chunk_run`).

The console hands over a `ChunkParams` (what the request decides, the chunk's frozen ids, the
index's rows of them for a reprocess planned from the index, the time, and the lake's
directories the chunk must read); this reads the plan's rows and the events committed since,
decides, writes the chunk's new directories to the lake (its events, the senders'
notifications, new versions of messages) and returns a `ChunkResult`: what the console commits,
counts and applies to its read models in one transaction.
"""

import dataclasses
import hashlib
from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc

from workers.engine.actions import END, REPROCESS
from workers.jobs.decisions.chunk import (
    ChunkOutcome,
    Decision,
    chunk_message_ids,
    decide_chunk,
    decision_reason,
    edited_message,
    retargeted_messages,
    unknown_ids,
    with_body_versions,
    with_missing,
    with_newer,
)
from workers.jobs.decisions.plan import (
    MEMBER_SCHEMA,
    SIBLING_SCHEMA,
    ledger_of,
    members_from_index,
    read_plan_chunk,
)
from workers.lake.schema import MESSAGE_SCHEMA
from workers.lake.store import Lake, conform, messages_rows_in


@dataclass(frozen=True)
class ChunkParams:
    """Everything one chunk's decision needs. Paths are relative to `lake_root`. The first
    fields are the request's (the same for each of its chunks), the last the chunk's own."""

    request_id: int
    action: str
    epoch: int
    actor: str  # who asked
    approver: str | None  # who approved (None: nobody needed to)
    comment: str
    lake_root: str
    plan_path: str
    plan_from_index: bool = False
    target_queue: str = ""
    error_code: str = ""
    error_description: str = ""
    edited_body: bytes | None = None
    redrive_target: str | None = None  # the request's target as JSON text, or None
    chunk: int = 0
    at: datetime | None = None
    chunk_ids: pa.Table | None = None  # message_id of the chunk's frozen ids
    index_rows: pa.Table | None = None  # the index's rows of them (plan_from_index)
    newer_paths: tuple = ()  # event commits others made since the plan
    ledger_paths: tuple = ()  # the ledger (snapshot, events): for ids the index lacks
    message_paths: tuple = ()  # the messages dataset (a reprocess's new versions)


@dataclass(frozen=True)
class Retarget:
    """The new versions of a reprocessed chunk's messages whose headers change: the request's
    redrive target added, or an earlier request's taken away."""

    directory: str
    versions: pa.Table  # message_id, version, body_size: of the new versions written


@dataclass(frozen=True)
class EditedBody:
    """R13: an edited body's new version, written; the original is kept."""

    directory: str
    version: int
    size: int
    sha256: str


@dataclass(frozen=True)
class ChunkResult:
    """What the console writes for a chunk: the lake directories to commit (None: nothing of
    that kind) and the outcome to count and apply to the read models."""

    outcome: ChunkOutcome
    events_dir: str | None = None
    notifications_dir: str | None = None
    retarget: Retarget | None = None
    edit: EditedBody | None = None


def chunk_run(params: ChunkParams) -> ChunkResult:
    """Decide one chunk and write its directories to the lake; nothing is committed."""
    lake = Lake(params.lake_root)
    members, siblings = _chunk_rows(lake, params)
    decision = _decision(params)
    if params.edited_body is not None and members.num_rows == 1:
        # The version after the one it has now (with what was committed since the plan).
        current = members.column("body_version")[0].as_py() or 1
        decision = dataclasses.replace(decision, body_version=current + 1)
    outcome = decide_chunk(members, siblings, decision, chunk=params.chunk, at=params.at)
    label = f"request{params.request_id}-chunk{params.chunk}"
    retarget = edit = None
    if outcome.done and decision.body_version is not None:
        edit = _edited_body(lake, params, members, decision.body_version)
    elif outcome.done and params.action == REPROCESS:
        retarget = _retarget(lake, params, outcome.events, label)
        if retarget is not None:
            outcome.events = with_body_versions(outcome.events, retarget.versions)
    events_dir = notifications_dir = None
    if outcome.events.num_rows:
        events_dir = lake.write_arrow(outcome.events, lake.new_dir("events", label))
    if outcome.notifications.num_rows:
        notifications_dir = lake.write_arrow(
            outcome.notifications, lake.new_dir("notifications", label)
        )
    return ChunkResult(outcome, events_dir, notifications_dir, retarget, edit)


def _decision(params):
    """What the request decides, as its events record it: the fields the two share, and the
    reason the ledger gives."""
    shared = {
        f.name: getattr(params, f.name)
        for f in dataclasses.fields(Decision)
        if f.name not in ("reason", "body_version")
    }
    reason = decision_reason(
        action=params.action,
        request_id=params.request_id,
        approver=params.approver,
        comment=params.comment,
    )
    return Decision(**shared, reason=reason)


def _chunk_rows(lake, params):
    """(members, siblings) of the chunk as they stand now: the plan's rows (or the index's),
    a row of nulls for each frozen id nobody knows, and the events committed since on top."""
    siblings = None
    if params.plan_from_index:
        members = members_from_index(params.index_rows)
    else:
        plan = lake.path(params.plan_path)
        members = read_plan_chunk(f"{plan}/members", params.chunk, MEMBER_SCHEMA)
        if params.action == END:
            siblings = read_plan_chunk(f"{plan}/siblings", params.chunk, SIBLING_SCHEMA)
    members = with_missing(
        members if members is not None else MEMBER_SCHEMA.empty_table(), params.chunk_ids
    )
    if params.newer_paths:
        newer = ledger_of(lake, chunk_message_ids(members, siblings), list(params.newer_paths))
        members = with_newer(members, newer)
        if siblings is not None:
            siblings = with_newer(siblings, newer)
    # A member the index does not hold is read from the ledger: a message can leave the index
    # after it was frozen (delivered without ever failing), and it is then skipped, as a plan
    # from the lake would skip it, not failed as unknown. Rare.
    if params.plan_from_index and len(unknown := unknown_ids(members)):
        members = with_newer(members, ledger_of(lake, unknown, list(params.ledger_paths)))
    return members, siblings


def _retarget(lake, params, events, label):
    """Each reprocessed message must reach its sink with this request's redrive target, or with
    none: a sink reads the `redrive_target` of the version it delivers (the messages dataset,
    per version), which only a request writes (R18). So a chunk writes a new version of each
    message whose target must change (body, headers and all else kept), and its events point
    at it. Without a target only messages past their first version can carry an earlier
    request's target: a plain reprocess of messages as received reads nothing."""
    target = params.redrive_target
    current = events.select(["message_id", "body_version"])
    if target is None:
        versions = pc.fill_null(current.column("body_version"), 1)
        current = current.filter(pc.greater(versions, 1))
    if not current.num_rows:
        return None
    current = current.set_column(
        1, "version", pc.fill_null(current.column("body_version"), 1).cast(pa.int32())
    )
    ids = sorted(current.column("message_id").to_pylist())
    found = [
        conform(rows, MESSAGE_SCHEMA)
        for _, rows in messages_rows_in(lake.paths(params.message_paths), ids)
    ]
    if not found:
        return None
    rows = pa.concat_tables(found).join(current, keys=["message_id", "version"], join_type="inner")
    rows = retargeted_messages(rows.select(MESSAGE_SCHEMA.names), target)
    if not rows.num_rows:
        return None
    directory = lake.write_arrow(rows, lake.new_dir("messages", f"{label}-target"))
    return Retarget(directory, rows.select(["message_id", "version", "body_size"]))


def _edited_body(lake, params, members, version):
    """R13: the edited body is stored as a new version of the message; the original is kept.
    The edited version carries the request's redrive target too (it is made from the original,
    which carries none)."""
    message_id = members.column("message_id")[0].as_py()
    original = lake.read_arrow(
        "messages",
        list(params.message_paths),
        filter=(pc.field("message_id") == message_id) & (pc.field("version") == 1),
    )
    if not original.num_rows:
        raise ValueError(f"message {message_id!r} has no stored body to edit")
    body = bytes(params.edited_body)
    edited = edited_message(original, body, version=version, redrive_target=params.redrive_target)
    directory = lake.write_arrow(
        edited, lake.new_dir("messages", f"request{params.request_id}-chunk{params.chunk}-edit")
    )
    return EditedBody(directory, version, len(body), hashlib.sha256(body).hexdigest())
