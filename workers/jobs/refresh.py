"""The refresh of the console's read models as a Spark job.

extract: the events commits to fold (the new ones since the last refresh, or all of them for a
  full refresh), the whole ledger restricted to the messages those touch (the history
  generations and the events commits after them; when the messages are few, only their bucket
  files' row groups, read with pyarrow: `affected_history`) and their message metadata.
transform: one row per affected message with its current state and failures (`summarize`),
  joined to its metadata and fingerprinted (`index_rows`); the failure groups they touch
  (`group_rows`); the affected messages' counts by queue and state, and those of them that
  were delivered before the new commits (`delivered_before`: what the queue counts held for the
  messages the index leaves out), from which the task moves the queue counts; and the
  flows per queue and hour in the commits taken in (`hourly_flows`: into and out of quarantine,
  deliveries, failed attempts; a decision's commits included, whose states their writer moved).
load: Parquet files in a staging directory, read back in record batches by the task
  (console.readmodels.services), which loads the console DB in bulk and removes the directory.

No Django here: the task passes paths and flags. Column lengths mirror console.readmodels.models.
"""

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from workers.engine import states as S
from workers.jobs.fingerprint import digest_column, frames_column, masked_column
from workers.jobs.state import EVENT_COLUMNS, extract_events, extract_messages
from workers.lake.history import GROUP_ROWS, read_messages
from workers.lake.schema import HISTORY_SCHEMA, MESSAGE_SCHEMA, spark_schema
from workers.lake.store import conform, messages_rows_in, parquet_files

# A failure as workers.engine.states.is_failure says it, for Spark.
FAILED_FROM = S.DLNG
FAILED_TO = tuple(sorted(S.FAILED_TO))
REASON_MAX = 500
# An incremental refresh of at most this many new events reads the affected messages' metadata
# with pyarrow, from the row groups that may hold them: a few thousand messages' rows cost
# milliseconds, where a Spark scan of every messages commit grows with the lake.
TARGETED_MESSAGES = 50_000
# The messages' columns index_rows takes: the others (a body's hash, headers) are most of what a
# row group of metadata holds, and a small refresh reads its messages' row groups whole.
MESSAGE_COLUMNS = [
    "message_id",
    "version",
    "queue",
    "body_size",
    "content_type",
    "conversation_id",
    "sender",
    "enqueued_at",
]
# CharField lengths of console.readmodels.models: PostgreSQL refuses a longer value.
LENGTHS = {
    "exception_type": 200,
    "sender": 300,
    "conversation_id": 200,
    "content_type": 200,
    "run_id": 64,
}

INDEX_COLUMNS = [
    "message_id",
    "queue",
    "original_queue",
    "state",
    "run_id",
    "delivery_count",
    "candidate",
    "next_attempt_at",
    "first_failure_at",
    "last_failure_at",
    "reason",
    "exception_type",
    "group_id",
    "sender",
    "conversation_id",
    "body_size",
    "content_type",
    "body_version",
    "body_path",
    "enqueued_at",
    "updated_at",
]
# Besides the index's columns, each affected row carries what its failure group is made of.
GROUP_SOURCE_COLUMNS = ["failure_queue", "pattern", "frames", "sample_reason", "sample_stack"]
GROUP_COLUMNS = [
    "fingerprint",
    "queue",
    "exception_type",
    "pattern",
    "frames",
    "sample_message_id",
    "sample_reason",
    "sample_stack",
    "sample_at",
]


@dataclass
class RefreshParams:
    full: bool
    event_paths: list  # every committed events directory the history generations do not hold
    new_event_paths: list  # the events commits to fold (all of them when full)
    message_paths: list
    out_dir: str  # staging directory: must not exist yet
    # The history generations, [(directory, buckets, rows)]: with event_paths, the whole ledger.
    generations: list = field(default_factory=list)
    new_event_rows: int = 0  # rows of new_event_paths (the catalog's count)
    # The events commits whose flows are counted (`hourly_flows`), when not the new ones: every
    # commit the refresh takes in, those whose writer updated the read models itself included
    # (a decision's commits move states and counts in their own transaction, not the flows).
    flow_event_paths: list | None = None
    # Events commits whose events are left out of the history of a full run: those the read
    # models do not hold yet, when the counts are recomputed to check them (console.readmodels
    # .verify), not loaded.
    left_out_paths: list = field(default_factory=list)


@dataclass
class RefreshResult:
    affected: int = 0
    indexed: int = 0
    gone: int = 0
    groups: int = 0
    inflow_events: int = 0


def staging(out_dir, name):
    return str(Path(out_dir) / name)


def is_failure():
    return (
        (F.col("from_state") == FAILED_FROM)
        & F.col("to_state").isin(list(FAILED_TO))
        & (F.col("attempt") > 0)
    )


def _clean(column, length=None):
    """Text for the DB: never null, no NUL character (PostgreSQL refuses it), not too long."""
    text = F.regexp_replace(F.coalesce(column, F.lit("")), "\x00", "")
    return F.substring(text, 1, length) if length else text


# What summarize takes of a message's latest event, and of its latest failure: event column ->
# summary column.
_LATEST = {
    "queue": "queue",
    "to_state": "state",
    "run_id": "run_id",
    "delivery_count": "delivery_count",
    "candidate": "candidate",
    "next_attempt_at": "next_attempt_at",
    "body_version": "body_version",
    "at": "updated_at",
}
_LATEST_FAILURE = {
    "at": "last_failure_at",
    "queue": "failure_queue",
    "reason": "failure_reason",
    "exception_type": "failure_exception_type",
    "stack": "failure_stack",
}


def summarize(events: DataFrame) -> DataFrame:
    """One row per message: its current state (its latest event by (epoch, step)), when it first
    and last failed, and its latest failure. One aggregation, one shuffle; max_by skips the rows
    whose ordering is null, so the latest failure is taken among failures only."""
    order = F.struct("epoch", "step")
    failed = is_failure()
    return (
        events.groupBy("message_id")
        .agg(
            F.max_by(F.struct(*_LATEST), order).alias("s"),
            F.min(F.when(failed, F.col("at"))).alias("first_failure_at"),
            F.max_by(F.struct(*_LATEST_FAILURE), F.when(failed, order)).alias("f"),
        )
        .select(
            "message_id",
            *(F.col(f"s.{name}").alias(alias) for name, alias in _LATEST.items()),
            "first_failure_at",
            *(F.col(f"f.{name}").alias(alias) for name, alias in _LATEST_FAILURE.items()),
        )
    )


def with_body_path(messages: DataFrame) -> DataFrame:
    """Each message row with the lake directory it was read from, relative to the lake root.
    Lake.new_dir names every directory dataset/day/name, so it is the file path's last three
    folders; nothing there needs URL-decoding."""
    return messages.withColumn(
        "body_path",
        F.regexp_extract(F.col("_metadata.file_path"), r"([^/]+/[^/]+/[^/]+)/[^/]+$", 1),
    )


def index_rows(summary: DataFrame, messages: DataFrame) -> DataFrame:
    """The index row of every summarized message, `indexed` false for those the index must not
    hold (DLVD and never failed), plus what their failure group is made of.

    `messages` has the messages dataset's columns and `body_path`."""
    originals = messages.where(F.col("version") == 1).select(
        "message_id",
        F.col("queue").alias("original_queue"),
        "sender",
        "conversation_id",
        "enqueued_at",
    )
    bodies = messages.select(
        "message_id",
        F.col("version").alias("body_version"),
        "body_size",
        "content_type",
        "body_path",
    )
    rows = summary.join(originals, on="message_id", how="left").join(
        bodies, on=["message_id", "body_version"], how="left"
    )
    failed = F.col("first_failure_at").isNotNull()
    # Mask and extract once per failed message, then hash the results.
    rows = rows.withColumn(
        "pattern", F.when(failed, masked_column(F.col("failure_reason")))
    ).withColumn("frames", F.when(failed, frames_column(F.col("failure_stack"))))
    digest = digest_column(
        F.col("failure_queue"),
        F.col("failure_exception_type"),
        F.col("pattern"),
        F.col("frames"),
    )
    return rows.select(
        "message_id",
        "queue",
        F.coalesce("original_queue", "queue").alias("original_queue"),
        "state",
        # R1: while DLNG, the run that holds it; the run's id on other states says nothing.
        F.when(F.col("state") == S.DLNG, _clean(F.col("run_id"), LENGTHS["run_id"]))
        .otherwise(F.lit(""))
        .alias("run_id"),
        F.coalesce("delivery_count", F.lit(0)).alias("delivery_count"),
        F.coalesce("candidate", F.lit(False)).alias("candidate"),
        "next_attempt_at",
        "first_failure_at",
        "last_failure_at",
        _clean(F.col("failure_reason"), REASON_MAX).alias("reason"),
        _clean(F.col("failure_exception_type"), LENGTHS["exception_type"]).alias("exception_type"),
        F.when(failed, digest).otherwise(F.lit("")).alias("group_id"),
        _clean(F.col("sender"), LENGTHS["sender"]).alias("sender"),
        _clean(F.col("conversation_id"), LENGTHS["conversation_id"]).alias("conversation_id"),
        F.coalesce("body_size", F.lit(0)).cast("long").alias("body_size"),
        _clean(F.col("content_type"), LENGTHS["content_type"]).alias("content_type"),
        F.coalesce("body_version", F.lit(1)).alias("body_version"),
        F.coalesce("body_path", F.lit("")).alias("body_path"),
        F.coalesce("enqueued_at", "updated_at").alias("enqueued_at"),
        "updated_at",
        ((F.col("state") != S.DLVD) | failed).alias("indexed"),
        F.col("failure_queue"),
        "pattern",
        "frames",
        _clean(F.col("failure_reason")).alias("sample_reason"),
        _clean(F.col("failure_stack")).alias("sample_stack"),
    )


def group_rows(rows: DataFrame) -> DataFrame:
    """The failure groups the rows belong to, each described by its latest failure."""
    sample = F.struct(
        "failure_queue",
        "exception_type",
        "pattern",
        "frames",
        "message_id",
        "sample_reason",
        "sample_stack",
        "last_failure_at",
    )
    return (
        rows.where(F.col("indexed") & (F.col("group_id") != ""))
        .groupBy("group_id")
        .agg(F.max_by(sample, F.struct("last_failure_at", "message_id")).alias("g"))
        .select(
            F.col("group_id").alias("fingerprint"),
            F.col("g.failure_queue").alias("queue"),
            F.col("g.exception_type").alias("exception_type"),
            F.col("g.pattern").alias("pattern"),
            F.col("g.frames").alias("frames"),
            F.col("g.message_id").alias("sample_message_id"),
            F.col("g.sample_reason").alias("sample_reason"),
            F.col("g.sample_stack").alias("sample_stack"),
            # When the sample failed: an incremental refresh keeps the group's newer sample.
            F.col("g.last_failure_at").alias("sample_at"),
        )
    )


def without(events: DataFrame, left_out: DataFrame) -> DataFrame:
    """`events` but those of `left_out` (the same message, epoch and step)."""
    keys = ["message_id", "epoch", "step"]
    return events.join(left_out.select(*keys), keys, "left_anti")


def delivered_before(history: DataFrame, new_events: DataFrame) -> DataFrame:
    """(message_id, queue) of the affected messages whose state before the new events was DLVD:
    the queue counts held them there, and the index does not hold those never failed, so this is
    where the task learns what to take off. The new events are those of the commits being folded
    (a history generation may hold them already)."""
    latest = (
        without(history, new_events)
        .groupBy("message_id")
        .agg(F.max_by(F.struct("queue", "to_state"), F.struct("epoch", "step")).alias("s"))
    )
    return latest.where(F.col("s.to_state") == S.DLVD).select(
        "message_id", F.col("s.queue").alias("queue")
    )


def hourly_flows(events: DataFrame) -> DataFrame:
    """Events per queue, hour (UTC: the session's time zone) and flow (workers.engine.states.
    FLOWS): entering NDLV, leaving it, delivered, failed attempts."""
    flows = F.array_compact(
        F.array(
            F.when(F.col("to_state") == S.NDLV, F.lit(S.FLOW_QUARANTINED)),
            F.when(F.col("from_state") == S.NDLV, F.lit(S.FLOW_RELEASED)),
            F.when(F.col("to_state") == S.DLVD, F.lit(S.FLOW_DELIVERED)),
            F.when(is_failure(), F.lit(S.FLOW_FAILED)),
        )
    )
    return (
        events.select(
            "queue", F.date_trunc("hour", "at").alias("hour"), F.explode(flows).alias("flow")
        )
        .groupBy("queue", "hour", "flow")
        .count()
    )


def extract_generations(spark, directories) -> DataFrame:
    """The events the history generations hold, in the events' columns."""
    if not directories:
        return extract_events(spark, [])
    rows = spark.read.schema(spark_schema(HISTORY_SCHEMA)).parquet(*directories)
    return rows.select(*EVENT_COLUMNS)


def targeted(params: RefreshParams) -> bool:
    """Read the affected messages' events from their bucket files, with pyarrow on the driver,
    rather than scan every generation in Spark? When the row groups they may be in (one per
    message and generation, at most) hold no more than a quarter of the generations' rows: a
    few messages changed in a large lake."""
    held = sum(rows for _, _, rows in params.generations)
    reads = params.new_event_rows * len(params.generations) * GROUP_ROWS
    return bool(params.generations) and reads * 4 <= held


def affected_ids(params: RefreshParams) -> list:
    """The affected messages' ids, sorted: read with pyarrow from the new events commits (their
    id column only), so bounded by the commits being folded, not by the lake. A Spark job would
    cost a good part of a second of a small refresh."""
    files = [path for directory in params.new_event_paths for path in parquet_files(directory)]
    ids = [pq.read_table(path, columns=["message_id"]).column(0) for path in files]
    return sorted(pc.unique(pa.chunked_array(ids, pa.string())).to_pylist())


def stage_history(params: RefreshParams, ids) -> str:
    """The generations' events of the messages `ids`, read with pyarrow from their bucket files
    (`targeted`), into a staging directory: its path."""
    table = read_messages([(d, buckets) for d, buckets, _ in params.generations], ids)
    path = Path(staging(params.out_dir, "history"))
    path.mkdir(parents=True)
    pq.write_table(table, path / "part-00000.parquet")
    return str(path)


def affected_history(spark, params: RefreshParams, affected: DataFrame, staged) -> DataFrame:
    """Every event of the `affected` messages: from the history generations (read by
    `stage_history` into `staged` when targeted, else scanned by Spark) and the events commits
    after them."""
    recent = extract_events(spark, params.event_paths).join(affected, "message_id", "left_semi")
    if not params.generations:
        return recent
    if staged is None:
        folded = extract_generations(spark, [d for d, _, _ in params.generations])
        return folded.join(affected, "message_id", "left_semi").unionByName(recent)
    return extract_events(spark, [staged]).unionByName(recent)


def every_message(spark, params: RefreshParams) -> DataFrame:
    """Every message row but its body, with `body_path`: a Spark scan of every messages commit."""
    messages = extract_messages(spark, params.message_paths)
    if not params.message_paths:
        return messages.select(*MESSAGE_COLUMNS).withColumn("body_path", F.lit(""))
    return with_body_path(messages).select(*MESSAGE_COLUMNS, "body_path")


MESSAGE_READ_SCHEMA = pa.schema([MESSAGE_SCHEMA.field(c) for c in MESSAGE_COLUMNS])
STAGED_MESSAGES_SCHEMA = MESSAGE_READ_SCHEMA.append(pa.field("body_path", pa.string()))


def stage_messages(params: RefreshParams, ids) -> str:
    """The rows (every version) of the messages `ids`, the columns `index_rows` takes, with
    `body_path`, into a staging directory: its path. Read with pyarrow from each messages
    commit's row groups whose id range holds one of them (ingest sorts its files by id)."""
    tables = [STAGED_MESSAGES_SCHEMA.empty_table()]
    for directory, found in messages_rows_in(params.message_paths, ids, MESSAGE_COLUMNS):
        # Lake.new_dir names every directory dataset/day/name: what body_path holds.
        relative = "/".join(Path(directory).parts[-3:])
        found = conform(found, MESSAGE_READ_SCHEMA)
        tables.append(found.append_column("body_path", pa.repeat(relative, len(found))))
    path = Path(staging(params.out_dir, "messages"))
    path.mkdir(parents=True)
    pq.write_table(pa.concat_tables(tables), path / "part-00000.parquet")
    return str(path)


def affected_messages(spark, params: RefreshParams, affected: DataFrame, staged) -> DataFrame:
    """The `affected` messages' rows (every version) with `body_path`: read by `stage_messages`
    into `staged` when they are few, else by a Spark scan of every messages commit."""
    if staged is None:
        return every_message(spark, params).join(affected, on="message_id", how="left_semi")
    return spark.read.schema(spark_schema(STAGED_MESSAGES_SCHEMA)).parquet(staged)


def stage_reads(params: RefreshParams):
    """(history, messages): what `stage_history` and `stage_messages` staged, each None when
    Spark is to scan for it instead. Pure pyarrow, for a thread beside a Spark job."""
    few = params.new_event_rows <= TARGETED_MESSAGES and bool(params.message_paths)
    read_history = targeted(params)
    if not (few or read_history):
        return None, None
    ids = affected_ids(params)
    return (
        stage_history(params, ids) if read_history else None,
        stage_messages(params, ids) if few else None,
    )


def run_refresh(spark, params: RefreshParams) -> RefreshResult:
    """The refresh's outputs in `params.out_dir`. An incremental one with nothing to fold (the
    commits it takes in are all a decision's, whose writer moved states and counts itself)
    writes only the flows (`flows_only`): no message is affected, and the scan of every
    message's metadata an empty fold still paid was most of a refresh after a bulk decision."""
    result = RefreshResult()
    if flows_only(params):
        hourly_flows(extract_events(spark, params.flow_event_paths)).coalesce(1).write.parquet(
            staging(params.out_dir, "inflow")
        )
        return result
    new_events = extract_events(spark, params.new_event_paths)
    flow_events = (
        new_events
        if params.flow_event_paths is None
        else extract_events(spark, params.flow_event_paths)
    )
    if params.full:
        history = extract_generations(spark, [d for d, _, _ in params.generations]).unionByName(
            extract_events(spark, params.event_paths)
        )
        if params.left_out_paths:
            history = without(history, extract_events(spark, params.left_out_paths))
        messages = every_message(spark, params)
    else:
        affected = new_events.select("message_id").distinct()
        # The driver's pyarrow reads and the flows' Spark job overlap: a small refresh is
        # mostly waiting on each.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="refresh-reads") as reads:
            staged = reads.submit(stage_reads, params)
            hourly_flows(flow_events).coalesce(1).write.parquet(staging(params.out_dir, "inflow"))
            staged_history, staged_messages = staged.result()
        # Read twice (the rows, what was delivered before): written once, so that the
        # generations are scanned once.
        path = staging(params.out_dir, "affected-history")
        affected_history(spark, params, affected, staged_history).write.parquet(path)
        history = spark.read.parquet(path)
        messages = affected_messages(spark, params, affected, staged_messages)

    rows_path = staging(params.out_dir, "rows")
    index_rows(summarize(history), messages).write.parquet(rows_path)
    rows = spark.read.parquet(rows_path)
    group_rows(rows).write.parquet(staging(params.out_dir, "groups"))
    # Every queue's counts when full; else the affected messages' counts now, the task taking
    # off what they counted before.
    rows.groupBy("queue", "state").count().coalesce(1).write.parquet(
        staging(params.out_dir, "stats")
    )
    if params.full:
        hourly_flows(flow_events).coalesce(1).write.parquet(staging(params.out_dir, "inflow"))
    else:
        delivered_before(history, new_events).coalesce(1).write.parquet(
            staging(params.out_dir, "delivered")
        )

    result.affected = _count(rows_path)
    result.indexed = _count(rows_path, pads.field("indexed"))
    result.gone = result.affected - result.indexed
    result.groups = _count(staging(params.out_dir, "groups"))
    return result


def flows_only(params: RefreshParams) -> bool:
    """An incremental refresh with no events to fold, only commits whose flows it counts."""
    return not params.full and not params.new_event_paths and bool(params.flow_event_paths)


def _count(path, filter=None):
    dataset = pads.dataset(path, format="parquet")
    return dataset.count_rows(filter=filter) if dataset.files else 0
