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
import json
from dataclasses import dataclass, field
from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc

from workers.engine import states as S
from workers.engine.actions import END, REPROCESS
from workers.jobs.decisions.body_edits import FAILURE_SCHEMA, patched_messages
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
    # One message's headers as its new version carries them (JSON text), or None.
    edited_headers: str | None = None
    # A bulk edit: the JSON Patch of each member's body (JSON text), and a patched body's limit.
    patch: str | None = None
    max_body_bytes: int = 0
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
class Edits:
    """R13: edited messages as new versions, written; the versions they had are kept."""

    directory: str
    versions: pa.Table  # message_id, version, body_size, body_sha256: of the new versions


@dataclass(frozen=True)
class ChunkResult:
    """What the console writes for a chunk: the lake directories to commit (None: nothing of
    that kind), the outcome to count and apply to the read models, and the members a bulk edit
    could not edit, with why (FAILURE_SCHEMA; counted failed, left quarantined)."""

    outcome: ChunkOutcome
    events_dir: str | None = None
    notifications_dir: str | None = None
    retarget: Retarget | None = None
    edits: Edits | None = None
    failures: pa.Table = field(default_factory=FAILURE_SCHEMA.empty_table)


def chunk_run(params: ChunkParams) -> ChunkResult:
    """Decide one chunk and write its directories to the lake; nothing is committed."""
    lake = Lake(params.lake_root)
    label = f"request{params.request_id}-chunk{params.chunk}"
    members, siblings = _chunk_rows(lake, params)
    decision = _decision(params)
    patched = None
    failures = FAILURE_SCHEMA.empty_table()
    if params.patch is not None:
        # A member the patch cannot edit is not reprocessed: it stays as it is, quarantined.
        patched, failures = _patched(lake, params, members)
        edited = pc.is_in(members.column("message_id"), value_set=failures.column("message_id"))
        members = members.filter(pc.invert(edited))
    elif _edits_one(params) and members.num_rows == 1:
        # The version after the one it has now (with what was committed since the plan).
        current = members.column("body_version")[0].as_py() or 1
        decision = dataclasses.replace(decision, body_version=current + 1)
    outcome = decide_chunk(members, siblings, decision, chunk=params.chunk, at=params.at)
    outcome.failed += failures.num_rows
    retarget = edits = None
    if outcome.done and decision.body_version is not None:
        edits = _edited_one(lake, params, members, decision.body_version, label)
    elif outcome.done and patched is not None:
        edits = _edits_written(lake, patched, label)
        outcome.events = with_body_versions(outcome.events, edits.versions)
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
    return ChunkResult(outcome, events_dir, notifications_dir, retarget, edits, failures)


def _edits_one(params):
    return params.edited_body is not None or params.edited_headers is not None


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


def _current_rows(lake, params, current):
    """The messages dataset's row of each message of `current` (message_id, body_version) at
    the version it has now, one a message (a version found in two commits is the same
    version), sorted by id."""
    current = current.select(["message_id", "body_version"])
    current = current.set_column(
        1, "version", pc.fill_null(current.column("body_version"), 1).cast(pa.int32())
    )
    ids = sorted(current.column("message_id").to_pylist())
    found = [
        conform(rows, MESSAGE_SCHEMA)
        for _, rows in messages_rows_in(lake.paths(params.message_paths), ids)
    ]
    if not found:
        return MESSAGE_SCHEMA.empty_table()
    rows = pa.concat_tables(found).join(current, keys=["message_id", "version"], join_type="inner")
    rows = rows.select(MESSAGE_SCHEMA.names).sort_by("message_id")
    ids = rows.column("message_id").to_pylist()
    first = [at for at, message_id in enumerate(ids) if not at or ids[at - 1] != message_id]
    return rows.take(pa.array(first, pa.int64()))


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
    rows = _current_rows(lake, params, current)
    rows = retargeted_messages(rows, target)
    if not rows.num_rows:
        return None
    directory = lake.write_arrow(rows, lake.new_dir("messages", f"{label}-target"))
    return Retarget(directory, rows.select(["message_id", "version", "body_size"]))


def _patched(lake, params, members):
    """A bulk edit's patch applied to the chunk's members still quarantined (those it decides),
    each at the version it has now: (new versions, failures). A member whose body is not in the
    lake fails too, saying so."""
    quarantined = members.filter(pc.fill_null(pc.equal(members.column("to_state"), S.NDLV), False))
    rows = _current_rows(lake, params, quarantined)
    patched, failures = patched_messages(
        rows,
        json.loads(params.patch),
        max_bytes=params.max_body_bytes,
        redrive_target=params.redrive_target,
    )
    lost = quarantined.filter(
        pc.invert(pc.is_in(quarantined.column("message_id"), value_set=rows.column("message_id")))
    ).column("message_id")
    if len(lost):
        lost_rows = pa.table(
            {"message_id": lost, "reason": ["its body is not in the lake"] * len(lost)},
            schema=FAILURE_SCHEMA,
        )
        failures = pa.concat_tables([failures, lost_rows])
    return patched, failures


def _edits_written(lake, versions, label):
    directory = lake.write_arrow(versions, lake.new_dir("messages", f"{label}-edit"))
    return Edits(directory, versions.select(["message_id", "version", "body_size", "body_sha256"]))


def _edited_one(lake, params, members, version, label):
    """R13: one message's edited body or headers stored as a new version of it, the one it had
    kept. The new version carries the request's redrive target too."""
    current = _current_rows(lake, params, members)
    if not current.num_rows:
        message_id = members.column("message_id")[0].as_py()
        raise ValueError(f"message {message_id!r} has no stored body to edit")
    edited = edited_message(
        current,
        None if params.edited_body is None else bytes(params.edited_body),
        headers=params.edited_headers,
        version=version,
        redrive_target=params.redrive_target,
    )
    return _edits_written(lake, edited, label)
