"""Retention (R15) as a Spark job: the final messages past their queue's retention, and the lake
without them.

extract: every message's current state (the newest state snapshot and the events commits after
  it), and the events and messages commits and the history generations the purge may rewrite,
  each row tagged with the commit it was read from.
transform: `current` (each message's queue, state and the time of its latest event), `purgeable`
  (final messages whose latest event, the moment they became final, is older than their queue's
  `retention_days`), `without` (a dataset's rows minus the purged ones).
load: the purged ids, sorted by id; for each commit that held any of them, its other rows, one
  directory per commit (`<out>/<dataset>/commit_id=<id>`), sorted by message id so that reading
  one message stays a row group's read; the state and open snapshots without them; and the
  hourly flows their events had added (into and out of quarantine, deliveries, failed
  attempts: workers.jobs.refresh.hourly_flows). Each history generation that held their events
  is rewritten without them in its own layout (the same buckets: workers.jobs.history). The
  console moves the directories into the lake and swaps them in, in one transaction
  (console.retention).

Every commit keeps its id and its meaning ("these events were committed then"), minus the purged
messages: readers that read "the commits after N" (the refresh's cursor, a decision's plan, a
canary) read what they read before, less what is gone.

No Django here: the task passes paths and parameters.
"""

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from workers.engine import states as S
from workers.jobs.history import fill_empty_buckets, task_count, with_targets, write_files
from workers.jobs.refresh import hourly_flows
from workers.jobs.state import COMMIT_ID, extract_events, read_tagged
from workers.lake.schema import EVENT_SCHEMA, HISTORY_SCHEMA, MESSAGE_SCHEMA
from workers.lake.store import ROW_GROUP_BYTES

FINAL_STATES = sorted(S.FINAL_STATES)
DAY = timedelta(days=1)
# Where the rewritten rows of one commit land in the job's output (Spark's partition folders).
PARTITION = COMMIT_ID
IDS_COLUMNS = ["message_id", "queue", "state"]


@dataclass
class PurgeParams:
    now: datetime  # the clock: the purge is as of this moment
    retention_days: dict  # queue -> days
    default_days: int  # for a queue that is not in retention_days (one deleted since)
    queue: str | None  # only this queue's messages, or every queue's
    lake_root: str
    state_paths: list  # absolute: the newest state snapshot and the events commits after it
    snapshot_path: str | None  # absolute: the newest state snapshot, rewritten without them
    events: list  # [(commit id, path relative to lake_root)]: every events commit considered
    messages: list  # [(commit id, relative path)]: every messages commit considered
    ids_path: str  # output: the purged (message_id, queue, state), sorted by message_id
    out_dir: str  # output: work directory (must not exist yet)
    dry_run: bool = False
    history: list = field(default_factory=list)  # every history generation (Generation)
    # absolute: the newest open snapshot, rewritten without them. It holds no final message when
    # it is folded, but one it holds may have become final, and past retention, since.
    open_path: str | None = None


@dataclass
class PurgeResult:
    purged: int = 0
    # commit id -> rows it keeps, for every commit that held a purged message (0: nothing left;
    # otherwise its rows are in rewritten_dir(out_dir, dataset, commit id)).
    events: dict = field(default_factory=dict)
    messages: dict = field(default_factory=dict)
    history: dict = field(default_factory=dict)
    state_rows: int | None = None  # rows of the new snapshot (None: there was no snapshot)
    # rows of the new open snapshot (None: there was none, or it held none of the purged)
    open_rows: int | None = None


def _micros(moment):
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def retention_column(queue, retention_days, default_days):
    """Each row's retention in days: its queue's, or the default for a queue not listed."""
    pairs = [F.lit(x) for name, days in sorted(retention_days.items()) for x in (name, int(days))]
    if not pairs:
        return F.lit(int(default_days))
    return F.coalesce(F.try_element_at(F.create_map(*pairs), queue), F.lit(int(default_days)))


def current(events: DataFrame) -> DataFrame:
    """Each message's queue, state and the time of its latest event (by (epoch, step)): the
    columns retention looks at, from five narrow columns of the ledger, not its whole rows."""
    latest = events.groupBy("message_id").agg(
        F.max_by(F.struct("queue", "to_state", "at"), F.struct("epoch", "step")).alias("s")
    )
    return latest.select("message_id", "s.queue", "s.to_state", "s.at")


def purgeable(state: DataFrame, *, now, retention_days, default_days, queue=None) -> DataFrame:
    """(message_id, queue, state) of the messages in a final state whose latest event is older
    than `now` minus their queue's retention_days. A final state has no way out, so its latest
    event is the moment it became final. `state`: current state rows (`current`, or the folded
    state with the events' columns)."""
    days = retention_column(F.col("queue"), retention_days, default_days)
    cutoff = F.lit(_micros(now)) - days.cast("long") * F.lit(DAY // timedelta(microseconds=1))
    rows = state.where(F.col("to_state").isin(FINAL_STATES) & (F.unix_micros("at") < cutoff))
    if queue:
        rows = rows.where(F.col("queue") == queue)
    return rows.select("message_id", "queue", F.col("to_state").alias("state"))


def without(rows: DataFrame, purged: DataFrame) -> DataFrame:
    """A dataset's rows but those of the purged messages (every version, every event)."""
    return rows.join(purged.select("message_id"), on="message_id", how="left_anti")


def rewritten_dir(out_dir, dataset, commit_id):
    return str(Path(out_dir) / dataset / f"{PARTITION}={commit_id}")


# --- The job --------------------------------------------------------------------------------------


def _read_tagged(spark, params, commits, arrow_schema):
    return read_tagged(spark, params.lake_root, commits, arrow_schema)


def _holding(rows):
    """The commits the rows come from, sorted. One row per commit is collected: bounded by the
    catalog's size, not the messages'."""
    return sorted(row[PARTITION] for row in rows.select(PARTITION).distinct().collect())


def _rewrite(spark, params, dataset, commits, purged, arrow_schema, order, affected=None):
    """Rewrite the commits of `dataset` that hold purged messages (`affected`, when known);
    {commit id: rows kept}."""
    if not commits:
        return {}
    if affected is None:
        affected = _holding(
            _read_tagged(spark, params, commits, arrow_schema)
            .select("message_id", PARTITION)
            .join(purged.select("message_id"), on="message_id", how="left_semi")
        )
    if not affected:
        return {}
    chosen = [(i, p) for i, p in commits if i in set(affected)]
    out = str(Path(params.out_dir) / dataset)
    rows = without(_read_tagged(spark, params, chosen, arrow_schema), purged)
    # One task per commit and its rows sorted by id: each commit becomes one file whose row
    # groups (about ROW_GROUP_BYTES each, as ingest writes them) a reader after one message
    # skips by their statistics.
    (
        rows.repartition(PARTITION)
        .sortWithinPartitions(PARTITION, *order)
        .write.option("parquet.block.size", ROW_GROUP_BYTES)
        .partitionBy(PARTITION)
        .parquet(out)
    )
    return {i: _rows(rewritten_dir(params.out_dir, dataset, i)) for i in affected}


def generations_holding(generations, commits):
    """The history generations (PurgeParams.history) that hold events of these events commits."""
    return [g for g in generations if any(g.after < c <= g.upto for c in commits)]


def _rewrite_history(spark, params, purged, holding):
    """Rewrite the history generations that hold the purged messages' events (they came from
    the events commits `holding`), each in its own number of buckets; {generation id: rows
    kept}."""
    chosen = generations_holding(params.history, holding)
    if not chosen:
        return {}
    read = [(g.id, g.path) for g in chosen]
    rows = read_tagged(spark, params.lake_root, read, HISTORY_SCHEMA, column="generation")
    out = Path(params.out_dir) / "history"
    directory = F.concat(F.lit(f"{out}/{PARTITION}="), F.col("generation").cast("string"))
    buckets = F.create_map(*(F.lit(int(x)) for g in chosen for x in (g.id, g.buckets)))
    written = write_files(
        with_targets(without(rows, purged), directory, buckets[F.col("generation")]),
        tasks=task_count(sum(g.rows for g in chosen), sum(g.buckets for g in chosen)),
    )
    kept = {g.id: 0 for g in chosen}
    for target, count in written.items():
        kept[int(Path(target).parent.name.removeprefix(f"{PARTITION}="))] += count
    for g in chosen:
        if kept[g.id]:
            fill_empty_buckets(rewritten_dir(params.out_dir, "history", g.id), g.buckets)
    return kept


def run_purge(spark, params: PurgeParams) -> PurgeResult:
    result = PurgeResult()
    state = current(
        extract_events(spark, params.state_paths).select(
            "message_id", "epoch", "step", "at", "queue", "to_state"
        )
    )
    purged = purgeable(
        state,
        now=params.now,
        retention_days=params.retention_days,
        default_days=params.default_days,
        queue=params.queue,
    )
    # Sorted by id across files (range partitions written in order): the hash of the id list is
    # computed reading the files in name order (ids_summary).
    purged.orderBy("message_id").write.parquet(params.ids_path)
    result.purged = _rows(params.ids_path)
    if params.dry_run or result.purged == 0:
        return result
    purged = spark.read.parquet(params.ids_path)

    # The purged messages' events, narrow, in one pass over the ledger: which commits hold them,
    # and the flows they had added to the hourly flows (per queue, hour and flow), which the
    # console takes off its counts (a full refresh would no longer count them).
    history_path = str(Path(params.out_dir) / "purged-events")
    (
        _read_tagged(spark, params, params.events, EVENT_SCHEMA)
        .select("message_id", PARTITION, "at", "from_state", "to_state", "queue", "attempt")
        .join(purged.select("message_id"), on="message_id", how="left_semi")
        .write.parquet(history_path)
    )
    history = spark.read.parquet(history_path)
    hourly_flows(history).coalesce(1).write.parquet(str(Path(params.out_dir) / "inflow"))

    events_order = ["message_id", "epoch", "step"]
    holding = _holding(history)
    result.events = _rewrite(
        spark, params, "events", params.events, purged, EVENT_SCHEMA, events_order, holding
    )
    result.history = _rewrite_history(spark, params, purged, holding)
    messages_order = ["message_id", "version"]
    result.messages = _rewrite(
        spark, params, "messages", params.messages, purged, MESSAGE_SCHEMA, messages_order
    )
    if params.snapshot_path:
        snapshot = extract_events(spark, [params.snapshot_path])
        state_out = str(Path(params.out_dir) / "state")
        without(snapshot, purged).write.parquet(state_out)
        result.state_rows = _rows(state_out)
    if params.open_path:
        snapshot = extract_events(spark, [params.open_path])
        open_out = str(Path(params.out_dir) / "open")
        without(snapshot, purged).write.parquet(open_out)
        kept = _rows(open_out)
        # Usually none of them: a message still open at the last compaction, final and past
        # its retention now, with no compaction since (a quiet lake).
        result.open_rows = kept if kept != _rows(params.open_path) else None
    return result


# --- Reading the output back (pyarrow, on the driver; no Spark needed) ---------------------------


def _files(path):
    """The Parquet files of a directory Spark wrote, in name order (which is partition order)."""
    folder = Path(path)
    if not folder.exists():
        return []
    return sorted(p for p in folder.rglob("*.parquet") if not p.name.startswith((".", "_")))


def _rows(path):
    return sum(pq.ParquetFile(f).metadata.num_rows for f in _files(path))


def ids_batches(ids_path, *, columns=IDS_COLUMNS, batch_size=50_000):
    """The purged ids file as arrow tables of `columns`, in id order, a batch at a time."""
    for path in _files(ids_path):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size, columns=columns):
            yield pa.Table.from_batches([batch])


@dataclass
class IdsSummary:
    count: int = 0
    sha256: str = ""
    # queue -> {"count": n, "sha256": hash of that queue's ids}
    queues: dict = field(default_factory=dict)
    # (queue, state) -> n: what the queue counts lose
    states: dict = field(default_factory=dict)


def ids_hash_update(digest, ids):
    """The purged ids' hash, as an auditor recomputes it from the ids: SHA-256 over each id in
    UTF-8 followed by a newline, in sorted order (the same as an action request's frozen set)."""
    digest.update("".join(f"{message_id}\n" for message_id in ids).encode())


def ids_summary(ids_path):
    """Count and hash the purged ids, in all and per queue, in one pass over the sorted file
    (each queue's ids come in sorted order too, being a part of a sorted list)."""
    total = hashlib.sha256()
    per_queue = {}
    summary = IdsSummary()
    for table in ids_batches(ids_path):
        ids_hash_update(total, table.column("message_id").to_pylist())
        for queue in pc.unique(table.column("queue")).to_pylist():
            mine = table.filter(pc.equal(table.column("queue"), queue))
            ids_hash_update(
                per_queue.setdefault(queue, hashlib.sha256()), mine.column("message_id").to_pylist()
            )
            counted = summary.queues.setdefault(queue, {"count": 0})
            counted["count"] += mine.num_rows
        by_state = table.group_by(["queue", "state"]).aggregate([("message_id", "count")])
        for row in by_state.to_pylist():
            key = (row["queue"], row["state"])
            summary.states[key] = summary.states.get(key, 0) + row["message_id_count"]
        summary.count += table.num_rows
    summary.sha256 = total.hexdigest()
    summary.queues = {
        queue: {**summary.queues[queue], "sha256": per_queue[queue].hexdigest()}
        for queue in sorted(summary.queues)
    }
    return summary


def inflow_rows(out_dir):
    """[(queue, hour, flow, count)] the purged messages had added to the hourly flows."""
    rows = []
    for path in _files(Path(out_dir) / "inflow"):
        table = pq.read_table(path)
        # Spark may write timestamps as INT96 nanoseconds without a zone; they are UTC.
        hours = table.column("hour")
        hours = hours.cast(pa.timestamp(hours.type.unit, tz="UTC"))
        hours = hours.cast(pa.timestamp("us", tz="UTC"), safe=False)
        rows += zip(
            table.column("queue").to_pylist(),
            hours.to_pylist(),
            table.column("flow").to_pylist(),
            table.column("count").to_pylist(),
            strict=True,
        )
    return rows
