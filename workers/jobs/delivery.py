"""The delivery run as a Spark job (R1-R11, R14).

extract: the current state of the messages that are not final (the open snapshot + newer
  events: console.lake.selectors.lake_due_inputs), the poison list, and the message rows of the
  due ones alone (`write_bodies`: row-group statistics skip the rest of the lake), so that a run
  costs what is due, not what the lake holds.
transform: pick the due messages of enabled queues (`due_state`), mark those on the poison list
  (`mark_poisoned`), join the claims to their bodies (`with_bodies`), and deliver each partition
  through workers.engine.runner in the executors (`deliver`), which calls handlers in isolated
  children.
load: claims first (what the run holds in DLNG, so a sweeper can recover them if the run dies)
  and the events that take them into DLNG (`claim_events`), which the task commits before any
  handler runs (R1: a message whose handler runs is DLNG everywhere); then the outcome events,
  written exactly once: the handlers run during that single write.

No Django here: the task passes paths and parameters and records the commit (workers.tasks).
"""

import math
import os
from dataclasses import dataclass, field
from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from workers.engine import states as S
from workers.engine.policy import policy_from_mapping
from workers.engine.runner import RunContext, deliver_batches
from workers.engine.timings import times_read
from workers.jobs.conversations import end_conversations
from workers.jobs.state import EVENT_COLUMNS, extract_events, extract_messages, fold_state
from workers.lake.schema import (
    CLAIM_SCHEMA,
    EVENT_SCHEMA,
    MESSAGE_CONTENT_COLUMNS,
    MESSAGE_SCHEMA,
    STATE_FIELDS,
    ddl,
)
from workers.lake.store import conform, messages_rows_in
from workers.spark import default_parallelism

CLAIM_COLUMNS = [f.name for f in CLAIM_SCHEMA]
# Up to this many due messages, their rows are looked up in the messages commits by id
# (`write_bodies`, in the driver); above it, a run reads most row groups anyway, and Spark's join
# over every messages commit spreads that over the executors.
BODY_LOOKUP_MAX = 100_000


@dataclass
class DeliveryParams:
    run_id: str
    epoch: int
    now: datetime
    policies: dict  # every queue's policy as a dict (exception queues need theirs too)
    queues: list  # the queues this run delivers: enabled ones, maybe narrowed by --queue
    message_paths: list
    snapshot_paths: list  # the open snapshot (or, before the first one, the state snapshot)
    event_paths: list
    claims_path: str
    claim_events_path: str
    events_path: str
    conversation_events_path: str
    notifications_path: str
    # A directory of the run's own (which must not exist yet), for what it reads back: the due
    # set and its messages' rows. The caller removes it after the run.
    scratch_path: str = ""
    poison_ids: list = field(default_factory=list)  # [(message_id, reason)]
    poison_hashes: list = field(default_factory=list)  # [(body_sha256, reason)]
    # R9: the list above as of this change-log cursor; the executors follow the feed of its
    # changes from there (workers.engine.poison_feed), before every batch.
    poison_cursor: int = 0
    poison_feed_dir: str = ""
    fixed_clock: bool = False
    max_batch: int = 5000
    max_batch_bytes: int = 64 * 1024 * 1024
    handler_timeout: float = 300.0
    partitions: int | None = None


@dataclass
class DeliveryResult:
    claimed: int = 0
    claim_events: int = 0
    events: int = 0
    conversation_events: int = 0
    notifications: int = 0
    outcomes: dict = field(default_factory=dict)  # final state in this run -> count
    streaks: dict = field(default_factory=dict)  # queue -> failed attempts in a row (R11)
    disabled: dict = field(default_factory=dict)  # queue -> reason (R11)
    quarantined: list = field(default_factory=list)  # [(id, queue, reason, body_sha256)] (R9)
    # How long the handlers took, per queue (workers.engine.timings HandlerTimes.as_dict).
    handler_times: dict = field(default_factory=dict)


def due_state(state: DataFrame, *, queues, now) -> DataFrame:
    """The state of messages of the given queues that are TBDL, or WAIT and due by `now` (R5)."""
    return state.where(
        F.col("queue").isin(list(queues))
        & (
            (F.col("to_state") == S.TBDL)
            | ((F.col("to_state") == S.WAIT) & (F.col("next_attempt_at") <= F.lit(now)))
        )
    )


def with_bodies(claims: DataFrame, messages: DataFrame) -> DataFrame:
    """Claims joined to the message version each one delivers."""
    bodies = messages.select(
        "message_id", F.col("version").alias("body_version"), *MESSAGE_CONTENT_COLUMNS
    )
    return claims.join(bodies, on=["message_id", "body_version"], how="inner").withColumnRenamed(
        "to_state", "state"
    )


def mark_poisoned(
    due: DataFrame,
    messages: DataFrame,
    poison_ids: DataFrame,
    poison_hashes: DataFrame,
    *,
    body_match_queues,
) -> DataFrame:
    """R9: add `poison_reason` for messages whose id (or, on id_or_body queues, body hash) is on
    the shared poison list. Bodies' hashes are looked up only when a hash could match."""
    marked = due.join(
        F.broadcast(poison_ids.select("message_id", F.col("reason").alias("_id_reason"))),
        on="message_id",
        how="left",
    )
    hash_reason = F.lit(None).cast("string")
    if body_match_queues and poison_hashes is not None:
        hashes = messages.select(
            "message_id", F.col("version").alias("body_version"), "body_sha256"
        )
        by_hash = poison_hashes.select("body_sha256", F.col("reason").alias("_hash_reason"))
        marked = (
            marked.join(hashes, on=["message_id", "body_version"], how="left")
            .join(F.broadcast(by_hash), on="body_sha256", how="left")
            .drop("body_sha256")
        )
        hash_reason = F.when(
            F.col("queue").isin(list(body_match_queues)) & F.col("_hash_reason").isNotNull(),
            F.concat(F.lit("same body as a poisoned message: "), F.col("_hash_reason")),
        )
    return marked.withColumn("poison_reason", F.coalesce(F.col("_id_reason"), hash_reason)).drop(
        "_id_reason", "_hash_reason"
    )


def write_bodies(message_paths, message_ids, out_path):
    """The rows (every version) of the messages `message_ids` (sorted) in the committed
    directories `message_paths`, into one Parquet file under `out_path`: a row group is read
    only when its id statistics admit one of them (workers.lake.store.messages_rows_in). Returns
    how many rows it wrote."""
    os.makedirs(out_path)
    tmp = os.path.join(out_path, ".part-00000.parquet.tmp")
    rows = 0
    with pq.ParquetWriter(tmp, MESSAGE_SCHEMA, compression="zstd") as writer:
        for _, found in messages_rows_in(message_paths, message_ids):
            writer.write_table(conform(found, MESSAGE_SCHEMA))
            rows += found.num_rows
    os.replace(tmp, os.path.join(out_path, "part-00000.parquet"))
    return rows


def _messages_of(spark, params, due_path, every_message):
    """The message rows of the messages in `due_path` (a written due set, or the claims): read
    by id when they are few, else every message, for Spark to join."""
    if count_rows(due_path) > BODY_LOOKUP_MAX:
        return every_message
    ids = pads.dataset(due_path, format="parquet").to_table(columns=["message_id"])
    bodies_path = os.path.join(params.scratch_path, "bodies")
    write_bodies(
        params.message_paths,
        sorted(pc.unique(ids.column("message_id")).to_pylist()),
        bodies_path,
    )
    return extract_messages(spark, [bodies_path])


def deliver(due: DataFrame, ctx: RunContext) -> DataFrame:
    """The engine in the executors: one events row per transition (lazy until written)."""
    from pyspark import TaskContext

    def run_partition(batches):
        partition = TaskContext.get().partitionId()
        for table in deliver_batches(batches, ctx, partition=partition):
            yield from table.to_batches()

    return due.mapInArrow(run_partition, ddl(EVENT_SCHEMA))


def _partitioned(due: DataFrame, policies, count, max_batch, partitions):
    """The join already spreads messages by id. Only R11 needs more: all messages of a queue
    with disable_after go to one partition, in order, so "failed attempts in a row" means
    exactly that. (Tests may also ask for a number of partitions.)"""
    serial = [q for q, p in policies.items() if p.disable_after]
    if not serial and not partitions:
        return due
    key = F.when(F.col("queue").isin(serial), F.col("queue")).otherwise(F.col("message_id"))
    n = partitions or max(default_parallelism(due.sparkSession), math.ceil(count / max_batch))
    return due.repartition(n, key).sortWithinPartitions("queue", "enqueued_at", "message_id")


def run_context(params: DeliveryParams) -> RunContext:
    """What the engine needs of a run, the same whichever way it runs (Spark or local)."""
    return RunContext(
        run_id=params.run_id,
        epoch=params.epoch,
        policies={name: policy_from_mapping(p) for name, p in params.policies.items()},
        now=params.now,
        fixed_clock=params.fixed_clock,
        max_batch=params.max_batch,
        max_batch_bytes=params.max_batch_bytes,
        handler_timeout=params.handler_timeout,
        poison_cursor=params.poison_cursor,
        poison_feed_dir=params.poison_feed_dir,
        timings_dir=timings_dir(params),
    )


def timings_dir(params: DeliveryParams):
    """Where the run's partitions write their handlers' times: in its scratch folder, which the
    executors reach as they reach the lake."""
    return os.path.join(params.scratch_path, "handler-times") if params.scratch_path else ""


def run_delivery(spark, params: DeliveryParams, *, on_claimed=None) -> DeliveryResult:
    ctx = run_context(params)
    policies = ctx.policies
    result = DeliveryResult()
    queues = [q for q in params.queues if q in policies and policies[q].enabled]
    if not queues:
        return result
    before = extract_events(spark, [*params.snapshot_paths, *params.event_paths])
    every_message = extract_messages(spark, params.message_paths)
    messages = None
    due = due_state(fold_state(before), queues=queues, now=params.now)
    poison_ids = spark.createDataFrame(params.poison_ids, "message_id string, reason string")
    poison_hashes = None
    body_match_queues = [q for q, p in policies.items() if p.poison_match == "id_or_body"]
    if params.poison_hashes and body_match_queues:
        poison_hashes = spark.createDataFrame(
            params.poison_hashes, "body_sha256 string, reason string"
        )
        # The bodies' hashes are wanted before the claims are written: the due set is written
        # and read back, and its ids say which message rows to read.
        due_path = os.path.join(params.scratch_path, "due")
        due.write.parquet(due_path)
        due = spark.read.parquet(due_path)
        messages = _messages_of(spark, params, due_path, every_message)
    due = mark_poisoned(
        due,
        messages if messages is not None else every_message,
        poison_ids,
        poison_hashes,
        body_match_queues=body_match_queues,
    )
    # Claims are on disk before any handler runs (R7: the sweeper's record of what was held),
    # and the run delivers exactly the claims it wrote, read back.
    (
        due.withColumn("from_state", F.col("to_state"))
        .withColumn("at", F.lit(params.now))
        .withColumn("actor", F.lit(None).cast("string"))
        .withColumn("run_id", F.lit(params.run_id))
        .select(*CLAIM_COLUMNS, "poison_reason")
        .write.parquet(params.claims_path)
    )
    result.claimed = count_rows(params.claims_path)
    if result.claimed == 0:
        return result
    record_claims(params, result, on_claimed)
    claims = spark.read.parquet(params.claims_path)
    if messages is None:
        messages = _messages_of(spark, params, params.claims_path, every_message)
    # An isolation batch never spans two Arrow batches: let one Arrow batch hold a whole one.
    spark.conf.set(
        "spark.sql.execution.arrow.maxRecordsPerBatch", str(max(10_000, params.max_batch))
    )
    partitioned = _partitioned(
        with_bodies(claims, messages), policies, result.claimed, params.max_batch, params.partitions
    )
    deliver(partitioned, ctx).write.parquet(params.events_path)
    result.handler_times = times_read(ctx.timings_dir).as_dict()
    summarize_run(params.events_path, policies, result)
    if result.outcomes.get(S.ENDED):
        # The conversations' other messages may be anywhere in the lake.
        _end_conversations(spark, params, before, every_message, result)
    return result


def end_conversations_of_run(spark, params: DeliveryParams, result: DeliveryResult):
    """R6 for a run delivered without Spark (workers.jobs.delivery_local): as run_delivery ends
    the conversations of the messages it ENDED, from the same inputs."""
    before = extract_events(spark, [*params.snapshot_paths, *params.event_paths])
    _end_conversations(spark, params, before, extract_messages(spark, params.message_paths), result)


# The claim's events come first among a run's events of a message: every step the executors
# number is 1 or more (runner.Sequence).
STEP_DUE, STEP_TAKEN = -2, -1


def claim_events(claims: pa.Table, *, epoch, at, actor, run_id) -> pa.Table:
    """R1: the events that take a run's claims into DLNG, as rules.start_attempt writes them
    one by one: a due retry first goes WAIT -> TBDL, then every claim TBDL -> DLNG, its attempt
    numbered one more than its delivery count."""
    n = claims.num_rows
    at_type = EVENT_SCHEMA.field("at").type
    waiting = pc.equal(claims.column("to_state"), S.WAIT)
    no_time = pa.nulls(n, EVENT_SCHEMA.field("next_attempt_at").type)

    def events(rows, from_state, to_state, step, attempt, reason, next_attempt_at):
        m = rows.num_rows
        columns = {name: rows.column(name) for name in STATE_FIELDS if name != "next_attempt_at"}
        return pa.table(
            {
                "message_id": rows.column("message_id"),
                "epoch": pa.repeat(pa.scalar(epoch, pa.int64()), m),
                "step": pa.repeat(pa.scalar(step, pa.int64()), m),
                "at": pa.repeat(pa.scalar(at, at_type), m),
                "from_state": from_state,
                "to_state": pa.repeat(pa.scalar(to_state), m),
                "attempt": attempt,
                **columns,
                "next_attempt_at": next_attempt_at,
                "actor": pa.repeat(pa.scalar(actor), m),
                "run_id": pa.repeat(pa.scalar(run_id), m),
                "reason": pa.repeat(pa.scalar(reason, pa.string()), m),
            },
        )

    due = claims.filter(waiting)
    parts = [
        events(
            due,
            due.column("to_state"),
            S.TBDL,
            STEP_DUE,
            pa.repeat(pa.scalar(0, pa.int32()), due.num_rows),
            S.REASON_DUE,
            pa.nulls(due.num_rows, no_time.type),
        ),
        events(
            claims,
            pa.repeat(pa.scalar(S.TBDL), n),
            S.DLNG,
            STEP_TAKEN,
            pc.cast(pc.add(claims.column("delivery_count"), 1), pa.int32()),
            None,
            # A due retry's time was cleared on its way to TBDL.
            pc.if_else(waiting, no_time, claims.column("next_attempt_at").cast(no_time.type)),
        ),
    ]
    return _as_events(pa.concat_tables(parts)).sort_by(
        [("message_id", "ascending"), ("step", "ascending")]
    )


def _as_events(table):
    """`table`'s columns in the ledger's layout; those it lacks (no failure here) as nulls."""
    n = table.num_rows
    return pa.table(
        {
            f.name: table.column(f.name).cast(f.type)
            if f.name in table.column_names
            else pa.nulls(n, f.type)
            for f in EVENT_SCHEMA
        },
        schema=EVENT_SCHEMA,
    )


def write_claim_events(claims_path, out_path, *, epoch, at, actor, run_id):
    """The claims' DLNG events, a claims file at a time, into one new directory. Returns how
    many events were written."""
    os.makedirs(out_path)
    tmp = os.path.join(out_path, ".part-00000.parquet.tmp")
    rows = 0
    with pq.ParquetWriter(tmp, EVENT_SCHEMA, compression="zstd") as writer:
        claims = pads.dataset(claims_path, format="parquet")
        for batch in claims.to_batches(columns=[*CLAIM_COLUMNS]):
            if batch.num_rows:
                table = claim_events(
                    pa.Table.from_batches([batch]), epoch=epoch, at=at, actor=actor, run_id=run_id
                )
                writer.write_table(table)
                rows += table.num_rows
    os.replace(tmp, os.path.join(out_path, "part-00000.parquet"))
    return rows


def record_claims(params: DeliveryParams, result: DeliveryResult, on_claimed):
    """The DLNG events of the claims at params.claims_path, written and counted in `result`,
    then handed to `on_claimed`: the task commits them there, before any handler is called."""
    result.claim_events = write_claim_events(
        params.claims_path,
        params.claim_events_path,
        epoch=params.epoch,
        at=params.now,
        actor=f"{os.uname().nodename}/run {params.run_id}",
        run_id=params.run_id,
    )
    if on_claimed is not None:
        on_claimed(result)


def count_rows(path):
    """Rows in a written directory, from the Parquet footers alone (no Spark job)."""
    return pads.dataset(path, format="parquet").count_rows()


def summarize_run(events_path, policies, result):
    """What the run did, in one streaming, vectorized pass over its events with pyarrow.

    A message's events of one run are written one after the other by the partition that
    delivered it, so its last event is the one the next message's events follow: no shuffle,
    and memory bounded by one record batch however large the run."""
    serial = {q: p.disable_after for q, p in policies.items() if p.disable_after}
    outcomes, peaks = {}, {}
    columns = ["message_id", "to_state", "queue", "reason", "queue_streak", "step"]
    last_step = {}
    for fragment in pads.dataset(events_path, format="parquet").get_fragments():
        carry = None
        for batch in fragment.to_batches(columns=columns):
            if batch.num_rows == 0:
                continue
            table = pa.Table.from_batches([b for b in (carry, batch) if b is not None])
            table = table.combine_chunks()
            ids = table.column("message_id")
            n = table.num_rows
            # Row i is a message's last event when row i + 1 belongs to another message; the
            # batch's final row waits for the next batch to tell.
            is_last = pc.not_equal(ids.slice(0, n - 1), ids.slice(1))
            _tally(table.slice(0, n - 1).filter(is_last), outcomes, result)
            _streaks(pa.Table.from_batches([batch]), serial, result, peaks, last_step)
            carry = table.slice(n - 1).to_batches()[0]
            result.events += batch.num_rows
        if carry is not None:
            _tally(pa.Table.from_batches([carry]), outcomes, result)
    result.outcomes = outcomes
    for queue, peak in peaks.items():
        if peak >= serial[queue]:
            result.disabled[queue] = f"queue disabled: {serial[queue]} failed attempts in a row"


def _tally(last_events, outcomes, result):
    for item in pc.value_counts(last_events.column("to_state")).to_pylist():
        outcomes[item["values"]] = outcomes.get(item["values"], 0) + item["counts"]
    ndlv = last_events.filter(pc.equal(last_events.column("to_state"), S.NDLV))
    for row in ndlv.select(["message_id", "queue", "reason"]).to_pylist():
        result.quarantined.append((row["message_id"], row["queue"], row["reason"], None))


def _streaks(events, serial, result, peaks, last_step):
    """R11: each serial queue's latest streak (by step: the order attempts happened in) and its
    highest."""
    if not serial or events.num_rows == 0:
        return
    mask = pc.and_(
        pc.is_valid(events.column("queue_streak")),
        pc.is_in(events.column("queue"), pa.array(list(serial))),
    )
    for row in events.filter(mask).select(["queue", "queue_streak", "step"]).to_pylist():
        queue = row["queue"]
        if row["step"] > last_step.get(queue, -1):
            last_step[queue] = row["step"]
            result.streaks[queue] = row["queue_streak"]
        peaks[queue] = max(peaks.get(queue, 0), row["queue_streak"])


def _end_conversations(spark, params, before, messages, result):
    """R6 return_to_sender ends the message's conversation as R13 does: notify the sender and
    end the conversation's other unfinished messages."""
    run_events = extract_events(spark, [params.events_path])
    ended = (
        fold_state(run_events).where(F.col("to_state") == S.ENDED).select("message_id", "reason")
    )
    after = fold_state(before.unionByName(run_events.select(*EVENT_COLUMNS)))
    events, notifications = end_conversations(
        after,
        messages,
        ended.withColumn("code", F.lit("permanent-failure")),
        epoch=params.epoch,
        at=params.now,
        actor=f"engine/run {params.run_id}",
        run_id=params.run_id,
    )
    events.write.parquet(params.conversation_events_path)
    notifications.write.parquet(params.notifications_path)
    result.conversation_events = count_rows(params.conversation_events_path)
    result.notifications = count_rows(params.notifications_path)
