"""The plan: every frozen id with its current state (the latest event of the ledger) and its
chunk, and for an end with error its conversation and sender, plus the conversations' other
unfinished messages. A Spark job over the whole lake (`plan_members`, `plan_siblings`), written
partitioned by chunk so each chunk is one small directory; a small set's members are planned the
same way with pyarrow (`plan_members_arrow`): a Spark job costs seconds of overhead. A reprocess
planned from the console's index writes no plan: each chunk makes its rows of the index's
(`members_from_index`)."""

import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from workers.engine import states as S
from workers.engine.actions import END
from workers.jobs.state import EVENT_COLUMNS, extract_events, extract_messages, fold_state
from workers.lake.schema import EVENT_SCHEMA
from workers.lake.store import Lake

STATE_COLUMNS = [c for c in EVENT_COLUMNS if c != "message_id"]
META_COLUMNS = ["conversation_id", "sender"]


@dataclass(frozen=True)
class PlanParams:
    """Where the plan reads and writes, every path whole."""

    action: str
    chunk_ids_path: str  # write_chunk_ids' file
    snapshot_paths: list
    event_paths: list
    message_paths: list
    out_dir: str  # must not exist yet
    # Small row groups: a chunk's reader skips every other chunk's rows by their statistics.
    row_group_rows: int = 25_000

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


def plan_write(params: PlanParams, spark=None):
    """The one entry point of the plan: with Spark when `spark` is given, otherwise with pyarrow
    on the worker (a small set's members only: an end with error needs the whole lake's state
    for its siblings, and is planned with Spark). Returns (members, siblings) row counts."""
    if spark is not None:
        return run_plan(spark, params)
    ids = pq.read_table(params.chunk_ids_path)
    # Only the frozen ids' events are read: the snapshot and the commits, filtered on the ids.
    # The plan's paths are whole, hence a lake rooted at the top.
    events = ledger_of(
        Lake("/"), ids.column("message_id"), [*params.snapshot_paths, *params.event_paths]
    )
    members = plan_members_arrow(ids, events)
    write_plan_arrow(members, params, row_group_rows=params.row_group_rows)
    return members.num_rows, 0


def ledger_of(lake: Lake, message_ids, paths) -> pa.Table:
    """Every event of `message_ids` in the ledger's directories `paths` of `lake`."""
    return lake.read_arrow("events", paths, filter=pc.field("message_id").isin(message_ids))


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


def read_plan_chunk(path, chunk, schema):
    """One chunk's rows of the plan's members or siblings, in the lake's types (Spark may write
    timestamps its own way); None when there is no such plan."""
    try:
        dataset = pads.dataset(path, format="parquet")
    except FileNotFoundError:
        return None
    table = dataset.to_table(columns=schema.names, filter=pc.field("chunk") == chunk)
    return table.cast(schema)


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
