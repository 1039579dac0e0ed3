"""Carrying out an administrator's decision (R13) on a frozen set of messages.

Free of Django, in parts:
- the plan, a Spark job over the whole lake: every frozen id with its current state (the latest
  event of the ledger), its chunk, and for an end with error its conversation and sender, plus the
  conversations' other unfinished messages (`plan_members`, `plan_siblings`). Written partitioned
  by chunk, so each chunk is one small directory. A small set's members are planned the same
  way with pyarrow (`plan_members_arrow`): a Spark job costs seconds of overhead.
- the chunks, pure pyarrow over one plan directory at a time (`decide_chunk`): the decision
  events of the members still NDLV, the siblings' ENDED events and the senders' notifications.
  A chunk is a few thousand rows; a Spark job per chunk would cost more than the work.
- an edited body's new version (`edited_message`), and the outcome of a progressive redrive's
  step (a canary is a one-step progression) from the events that followed it (`step_outcome`).

The console (console.decisions.execution) reads the lake, commits each chunk in one DB
transaction, and watches the steps (console.decisions.sweeper).
"""

import hashlib
import os
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from workers.engine import states as S
from workers.engine.actions import END, REPROCESS, TO_STATE, VERBS
from workers.jobs.conversations import CONVERSATION_STEP_BASE
from workers.jobs.state import EVENT_COLUMNS, extract_events, extract_messages, fold_state
from workers.lake.schema import EVENT_SCHEMA, MESSAGE_SCHEMA, NOTIFICATION_SCHEMA, STATE_FIELDS

CHUNK_IDS_SCHEMA = pa.schema([("message_id", pa.string()), ("chunk", pa.int32())])
STATE_COLUMNS = [c for c in EVENT_COLUMNS if c != "message_id"]
META_COLUMNS = ["conversation_id", "sender"]


# --- Chunks of the frozen set --------------------------------------------------------------------


def step_bounds(steps):
    """Where each step of a progressive redrive ends in the sorted frozen set: [1, 10, 100] ends
    at positions 1, 11, 111."""
    return np.cumsum(np.asarray(steps or [], dtype=np.int64))


def chunk_of(position, *, chunk_size, steps=()):
    """The chunk of the id at `position` in the sorted frozen set: each step of a progressive
    redrive is one chunk (a canary of N is the one step [N]), then `chunk_size` ids per chunk.
    The same on every attempt, so a chunk's idempotency key always names the same ids."""
    return int(_chunks_of(np.asarray([position], dtype=np.int64), chunk_size, steps)[0])


def _chunks_of(positions, chunk_size, steps):
    """chunk_of, for a whole array of positions at once."""
    bounds = step_bounds(steps)
    if not len(bounds):
        return positions // chunk_size
    within = np.searchsorted(bounds, positions, side="right")
    rest = len(bounds) + (positions - bounds[-1]) // chunk_size
    return np.where(positions < bounds[-1], within, rest)


def chunk_count(count, *, chunk_size, steps=()):
    if count == 0:
        return 0
    return chunk_of(count - 1, chunk_size=chunk_size, steps=steps) + 1


def step_sizes(steps, count):
    """How many of a set of `count` ids each step takes: the steps as asked, the last ones cut
    short (or left out) when the set is smaller than their sum."""
    sizes, left = [], count
    for size in steps or []:
        if left <= 0:
            break
        sizes.append(min(size, left))
        left -= size
    return sizes


def write_chunk_ids(id_batches, path, *, chunk_size, steps=()):
    """Number the frozen ids (sorted, in batches) with their chunk, streaming into one Parquet
    file: what the plan joins to the ledger. Returns how many ids were written."""
    position = 0
    with pq.ParquetWriter(path, CHUNK_IDS_SCHEMA, compression="zstd") as writer:
        for ids in id_batches:
            positions = np.arange(position, position + len(ids), dtype=np.int64)
            chunks = _chunks_of(positions, chunk_size, steps)
            writer.write_table(
                pa.table(
                    {"message_id": ids, "chunk": chunks.astype(np.int32)}, schema=CHUNK_IDS_SCHEMA
                )
            )
            position += len(ids)
    return position


# --- The plan (Spark) ----------------------------------------------------------------------------


@dataclass
class PlanParams:
    action: str
    chunk_ids_path: str  # write_chunk_ids' file
    snapshot_paths: list
    event_paths: list
    message_paths: list
    out_dir: str  # must not exist yet

    @property
    def members_path(self):
        return f"{self.out_dir}/members"

    @property
    def siblings_path(self):
        return f"{self.out_dir}/siblings"


def plan_members(chunk_ids: DataFrame, events: DataFrame, meta: DataFrame | None) -> DataFrame:
    """Each frozen id the ledger knows, with its chunk and its current state, and its
    conversation and sender when they are needed. One join: the ids' events take their chunk
    with them into the fold. (An id the ledger does not know is missing here; the chunk step
    finds it missing and reports it failed.)"""
    # A hash join: a sort-merge join would sort both sides by id, only for the plan to be sorted
    # by chunk again when written (measured: 2 s of 14 at 1M messages).
    members = fold_state(
        events.join(chunk_ids.hint("shuffle_hash"), on="message_id"), carry=("chunk",)
    )
    if meta is not None:
        members = members.join(meta, on="message_id", how="left")
    else:
        for name in META_COLUMNS:
            members = members.withColumn(name, F.lit(None).cast("string"))
    return members.select("message_id", "chunk", *STATE_COLUMNS, *META_COLUMNS)


def plan_siblings(members: DataFrame, state: DataFrame, meta: DataFrame) -> DataFrame:
    """End with error (R13): the other unfinished messages of every conversation a decided
    member belongs to, each assigned to the chunk of its conversation's first decided member
    (`ended_by`), so that chunk ends them."""
    decided = members.where(F.col("to_state") == S.NDLV)
    conversations = (
        decided.where(F.col("conversation_id").isNotNull())
        .groupBy("conversation_id")
        .agg(F.min(F.struct("message_id", "chunk")).alias("first"))
        .select(
            "conversation_id",
            F.col("first.message_id").alias("ended_by"),
            F.col("first.chunk").alias("chunk"),
        )
    )
    return (
        state.where(F.col("to_state").isin(list(S.OPEN_STATES)))
        .join(meta.select("message_id", "conversation_id"), on="message_id")
        .join(F.broadcast(conversations), on="conversation_id")
        .join(decided.select("message_id"), on="message_id", how="left_anti")
        .select("message_id", "chunk", "ended_by", *STATE_COLUMNS)
    )


def message_meta(messages: DataFrame) -> DataFrame:
    """A message's conversation and sender: they are the same in every version."""
    return messages.where(F.col("version") == 1).select("message_id", *META_COLUMNS)


# Small row groups: a chunk's reader skips every other chunk's rows by their statistics.
PLAN_ROW_GROUP_BYTES = 1024 * 1024


def _write_plan(df: DataFrame, path):
    """Each file sorted by chunk, no shuffle: the rows are already spread by message id."""
    df.sortWithinPartitions("chunk", "message_id").write.option(
        "parquet.block.size", PLAN_ROW_GROUP_BYTES
    ).parquet(path)


def run_plan(spark, params: PlanParams):
    """Write the plan; returns (members, siblings) row counts."""
    chunk_ids = spark.read.parquet(params.chunk_ids_path)
    events = extract_events(spark, [*params.snapshot_paths, *params.event_paths])
    meta = None
    if params.action == END:
        meta = message_meta(extract_messages(spark, params.message_paths))
    _write_plan(plan_members(chunk_ids, events, meta), params.members_path)
    siblings = 0
    if params.action == END:
        planned = spark.read.parquet(params.members_path)
        _write_plan(plan_siblings(planned, fold_state(events), meta), params.siblings_path)
        siblings = _count(params.siblings_path)
    return _count(params.members_path), siblings


def _count(path):
    return pads.dataset(path, format="parquet").count_rows()


# --- The plan of a small set (pyarrow) -----------------------------------------------------------


def plan_members_arrow(chunk_ids: pa.Table, events: pa.Table) -> pa.Table:
    """plan_members without Spark, for a set small enough to plan on the worker: `events` holds
    (at least) the frozen ids' rows of the ledger. No conversation and sender: an end with error
    is planned with Spark, its siblings need the whole lake's state. Sorted by chunk and id, as
    each of the Spark plan's files is."""
    members = chunk_ids.select(["message_id", "chunk"]).join(
        latest_by_id(events), keys="message_id", join_type="inner"
    )
    for name in META_COLUMNS:
        members = members.append_column(name, pa.nulls(members.num_rows, pa.string()))
    return members.select(["message_id", "chunk", *STATE_COLUMNS, *META_COLUMNS]).sort_by(
        [("chunk", "ascending"), ("message_id", "ascending")]
    )


def write_plan_arrow(members: pa.Table, params: PlanParams, *, row_group_rows):
    """plan_members_arrow's rows as the members of the plan, in one file."""
    os.makedirs(params.members_path)
    pq.write_table(
        members, f"{params.members_path}/part-00000.parquet", row_group_size=row_group_rows
    )


MEMBER_SCHEMA = pa.schema(
    [*EVENT_SCHEMA, pa.field("conversation_id", pa.string()), pa.field("sender", pa.string())]
)
SIBLING_SCHEMA = pa.schema([*EVENT_SCHEMA, pa.field("ended_by", pa.string())])


def members_from_index(rows: pa.Table) -> pa.Table:
    """A reprocess's plan rows from what the console's index holds of its members (message_id,
    state, queue, body_version, delivery_count, candidate; as of the index's refresh, the
    chunk applies the events committed since). A reprocess's events take nothing else from the
    state they start from: the count, the flag and the batch limit are reset, and the message is
    not scheduled (_member_events). A fail keeps its batch limit, which the index does not hold,
    and an end with error needs the whole lake's conversations: both plan from the lake."""
    n = rows.num_rows
    columns = {
        "message_id": rows.column("message_id"),
        "to_state": rows.column("state"),
        "queue": rows.column("queue"),
        "body_version": rows.column("body_version"),
        "delivery_count": rows.column("delivery_count"),
        "candidate": rows.column("candidate"),
    }
    return pa.table(
        {f.name: columns.get(f.name, pa.nulls(n, f.type)) for f in MEMBER_SCHEMA},
        schema=MEMBER_SCHEMA,
    )


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


def read_chunk_ids(path, chunk):
    """The frozen ids of one chunk, from write_chunk_ids' file."""
    return pads.dataset(path, format="parquet").to_table(
        columns=["message_id"], filter=pc.field("chunk") == chunk
    )


def read_plan_chunk(path, chunk, schema):
    """One chunk's rows of the plan's members or siblings, in the lake's types (Spark may write
    timestamps its own way); None when there is no such plan."""
    try:
        dataset = pads.dataset(path, format="parquet")
    except FileNotFoundError:
        return None
    table = dataset.to_table(columns=schema.names, filter=pc.field("chunk") == chunk)
    return table.cast(schema)


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


def latest_by_id(events: pa.Table) -> pa.Table:
    """The latest event of each message in `events`, by (epoch, step)."""
    if events.num_rows == 0:
        return events
    ordered = events.sort_by(
        [("message_id", "ascending"), ("epoch", "ascending"), ("step", "ascending")]
    )
    ids = ordered.column("message_id")
    n = ordered.num_rows
    last = pc.not_equal(ids.slice(0, n - 1), ids.slice(1))
    mask = (
        pa.concat_arrays([last.combine_chunks(), pa.array([True])]) if n > 1 else pa.array([True])
    )
    return ordered.filter(mask)


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


def edited_message(original: pa.Table, body: bytes, *, version, redrive_target=None) -> pa.Table:
    """R13: an edited body as a new version of the message, the original (a message's row, of
    the messages dataset) kept: the same message with the new body, its hash and size, and the
    request's own redrive target (JSON text, or None)."""
    row = original.slice(0, 1).to_pylist()[0] | {
        "version": version,
        "body": body,
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "body_size": len(body),
        "redrive_target": redrive_target,
    }
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


# --- A step's outcome (progressive redrive; a canary is its one step) -----------------------------

STEP_PASSED, STEP_FAILED, STEP_PENDING = "passed", "failed", "pending"
CANARY_PASSED, CANARY_FAILED, CANARY_PENDING = STEP_PASSED, STEP_FAILED, STEP_PENDING
MAIN_REASONS = 3  # the new reasons a stopped step names, most frequent first
REASON_CHARS = 300


@dataclass(frozen=True)
class StepOutcome:
    """What became of one step's reprocessed messages since: how many failed an attempt again
    (back in WAIT or NDLV, or crashed: workers.engine.states.is_failure), how many reached a
    final state without failing (delivered, or ended with their conversation), and the first
    new failure's reason of each that failed, counted."""

    size: int
    delivered: int
    refailed: int
    reasons: list  # [(reason, messages)], most first, at most MAIN_REASONS
    first_failure: dict | None  # the earliest failure event: message_id, reason

    @property
    def pending(self):
        return self.size - self.delivered - self.refailed

    @property
    def rate(self):
        """The re-failure rate, in percent of the step's messages."""
        return 100 * self.refailed / self.size if self.size else 0.0

    def verdict(self, threshold):
        """failed as soon as more than `threshold` percent of the messages failed again (more
        outcomes can only add failures); passed once every message has an outcome and at most
        `threshold` percent failed again; pending otherwise. A threshold of 0: none may fail."""
        if 100 * self.refailed > threshold * self.size:
            return STEP_FAILED
        if self.pending <= 0:
            return STEP_PASSED
        return STEP_PENDING


def step_outcome(reprocessed, later: pa.Table) -> StepOutcome:
    """The outcome of a step that reprocessed the ids `reprocessed`, from the events committed
    after it. Events of other messages in `later` do not count."""
    events = later.filter(pc.is_in(later.column("message_id"), value_set=reprocessed))
    # A failure as workers.engine.states.is_failure says it, column-wise.
    failures = events.filter(
        pc.and_(
            pc.and_(
                pc.equal(events.column("from_state"), S.DLNG),
                pc.is_in(events.column("to_state"), value_set=pa.array(sorted(S.FAILED_TO))),
            ),
            pc.greater(events.column("attempt"), 0),
        )
    )
    first = None
    firsts = {}
    if failures.num_rows:
        first = failures.slice(0, 1).select(["message_id", "reason"]).to_pylist()[0]
        # A step is at most a few thousand messages: their failures fit in a dict.
        ordered = failures.sort_by([("epoch", "ascending"), ("step", "ascending")])
        for row in ordered.select(["message_id", "reason"]).to_pylist():
            firsts.setdefault(row["message_id"], (row["reason"] or "")[:REASON_CHARS])
    counted = {}
    for reason in firsts.values():
        counted[reason] = counted.get(reason, 0) + 1
    reasons = sorted(counted.items(), key=lambda item: (-item[1], item[0]))[:MAIN_REASONS]
    latest = latest_by_id(events)
    settled = pc.and_(
        pc.is_in(latest.column("to_state"), value_set=pa.array(sorted(S.FINAL_STATES))),
        pc.invert(
            pc.is_in(latest.column("message_id"), value_set=pa.array(list(firsts), pa.string()))
        ),
    )
    return StepOutcome(
        size=len(reprocessed),
        delivered=pc.sum(settled.cast(pa.int64())).as_py() or 0,
        refailed=len(firsts),
        reasons=[list(item) for item in reasons],
        first_failure=first,
    )


def percent(value):
    """12.5 -> "12.5%", 5.0 -> "5%"."""
    return f"{value:.2f}".rstrip("0").rstrip(".") + "%"


def step_detail(outcome: StepOutcome, verdict, *, step, steps, threshold):
    """What a step's outcome says on the request page: `step` (from 1) of `steps`. A request
    with one step calls it the canary."""
    noun = "canary message(s)" if steps == 1 else "message(s)"
    where = "" if steps == 1 else f"step {step} of {steps}: "
    if verdict == STEP_FAILED:
        said = "; ".join(f"{reason} ({n})" for reason, n in outcome.reasons)
        return (
            f"{where}{outcome.refailed} of {outcome.size} {noun} failed again: {said} \u2014 "
            f"{percent(outcome.rate)} is over the threshold of {percent(threshold)}"
        )
    if verdict == STEP_PASSED and not outcome.refailed:
        return f"{where}all {outcome.size} {noun} delivered"
    if verdict == STEP_PASSED:
        return (
            f"{where}{outcome.delivered} of {outcome.size} {noun} delivered, "
            f"{outcome.refailed} failed again ({percent(outcome.rate)}, at most "
            f"{percent(threshold)} allowed)"
        )
    return (
        f"{where}{outcome.size - outcome.pending} of {outcome.size} {noun} have an outcome "
        f"({outcome.refailed} failed again)"
    )


def canary_verdict(reprocessed, later: pa.Table):
    """(verdict, detail) of a canary, a step none of whose messages may fail again: failed if
    any of the `reprocessed` ids failed an attempt since (the first such event says which and
    why), passed when each has reached a final state (delivered, or ended), pending
    otherwise."""
    outcome = step_outcome(reprocessed, later)
    verdict = outcome.verdict(0)
    if verdict == STEP_FAILED:
        first = outcome.first_failure
        return verdict, f"message {first['message_id']} failed again: {first['reason']}"
    if verdict == STEP_PASSED:
        return verdict, f"all {outcome.delivered} canary message(s) delivered"
    return verdict, f"{outcome.delivered} of {outcome.size} canary message(s) have an outcome"
