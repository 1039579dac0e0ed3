"""The history compaction as a Spark job: the events commits not yet in a history generation,
and the generations merged with them, written as one new generation (workers.lake.history).

extract: the events commits, each row tagged with its commit's id (`read_tagged`), and the
  generations merged in (their rows carry their commit ids already).
transform: `with_targets`: each row's bucket file, from a hash of its message id.
load: `write_files`: each bucket file written with pyarrow in the executors, its rows sorted by
  (message id, epoch, step, commit) in row groups of GROUP_ROWS with statistics on the id only.
  Spark's own writer names files at random and sizes row groups in bytes, checked every hundred
  rows or more: the reader needs a file named by its bucket and row groups it can count on.

`merge_plan` decides which generations the new one absorbs, so that their number stays small
(a read opens one file per generation) while each event is rewritten a few times only.

No Django here: the console passes paths and counts (console.lake.services).
"""

import math
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from workers.jobs.state import read_tagged
from workers.lake.history import GROUP_ROWS, bucket_name
from workers.lake.schema import EVENT_SCHEMA, HISTORY_SCHEMA, spark_schema

# Generations fall in size classes, each MERGE_RATIO times larger than the one below; a new
# generation absorbs the newest ones of its class or a smaller one. So there are about
# log8(history's events / one fold's) + 1 of them (six after 40,000 folds of the same size), and
# each event is rewritten about four times per class it climbs.
MERGE_RATIO = 8
HISTORY_ORDER = ["message_id", "epoch", "step", "commit_id"]
# Rows per Spark task that writes bucket files: a few hundred thousand keeps tasks big enough to
# be worth their start and small enough to spread a large merge over the cores.
TASK_ROWS = 250_000
WRITTEN = "target string, rows long"


def size_class(rows):
    """0 for 0 to 7 rows, 1 for 8 to 63, 2 for 64 to 511, ... (in integers: no rounding at the
    bounds)."""
    level = 0
    while rows >= MERGE_RATIO:
        rows //= MERGE_RATIO
        level += 1
    return level


def merge_plan(sizes, new_rows):
    """Which generations a new one of `new_rows` events absorbs, `sizes` being the rows of the
    generations there are, oldest first: the index of the first one absorbed (len(sizes) for
    none). It absorbs the newest generation while that one is of its own size class or a
    smaller one, growing as it does: like a counter's carry, the small generations are merged
    often and the large ones seldom."""
    rows, first = new_rows, len(sizes)
    while first > 0 and size_class(sizes[first - 1]) <= size_class(rows):
        first -= 1
        rows += sizes[first]
    return first


def task_count(rows, files):
    return max(1, min(files, math.ceil(rows / TASK_ROWS)))


@dataclass
class HistoryFoldParams:
    lake_root: str
    events: list  # [(commit id, path relative to lake_root)]: the events commits to fold
    generations: list  # [path relative to lake_root]: the generations the new one absorbs
    out_dir: str  # absolute: the new generation's directory (must not exist yet)
    buckets: int
    rows: int  # about how many rows it will hold (from the catalog): sizes the Spark tasks


@dataclass
class HistoryFoldResult:
    rows: int = 0
    files: int = 0


def bucket_column(buckets) -> F.Column:
    """workers.lake.history.bucket_of, in Spark: CRC-32 of the id's UTF-8 bytes."""
    return F.pmod(F.crc32(F.col("message_id").cast("binary")), buckets)


def with_targets(rows: DataFrame, directory, buckets) -> DataFrame:
    """Each row with `target`, the bucket file it belongs in under `directory` (a column or a
    path), among `buckets` (a column or a number)."""
    directory = directory if isinstance(directory, F.Column) else F.lit(str(directory))
    buckets = buckets if isinstance(buckets, F.Column) else F.lit(int(buckets))
    name = F.concat(
        F.lit("/bucket-"), F.lpad(bucket_column(buckets).cast("string"), 5, "0"), F.lit(".parquet")
    )
    return rows.withColumn("target", F.concat(directory, name))


class _BucketFile:
    """One bucket file being written: rows in order, cut into row groups of exactly
    `group_rows` (the last one excepted), written to a hidden name and renamed when whole."""

    def __init__(self, target, group_rows):
        self.target = Path(target)
        self.target.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.target.with_name(f".{self.target.name}.{uuid.uuid4().hex}.tmp")
        self.writer = pq.ParquetWriter(
            self.tmp, HISTORY_SCHEMA, compression="zstd", write_statistics=["message_id"]
        )
        self.group_rows = group_rows
        self.pending = []
        self.pending_rows = 0
        self.rows = 0

    def add(self, table):
        self.pending.append(table)
        self.pending_rows += table.num_rows
        while self.pending_rows >= self.group_rows:
            self._flush(self.group_rows)

    def _flush(self, count):
        rows = pa.concat_tables(self.pending)
        self.writer.write_table(rows.slice(0, count), row_group_size=count)
        rest = rows.slice(count)
        self.pending, self.pending_rows = ([rest], rest.num_rows) if rest.num_rows else ([], 0)
        self.rows += count

    def close(self):
        if self.pending_rows:
            self._flush(self.pending_rows)
        self.writer.close()
        os.replace(self.tmp, self.target)
        return str(self.target), self.rows


def _runs(table):
    """(target, rows) for each run of rows with the same target, in order."""
    targets = table.column("target").combine_chunks()
    n = len(targets)
    if n == 0:
        return
    changes = pc.indices_nonzero(pc.not_equal(targets.slice(1), targets.slice(0, n - 1)))
    starts = [0, *(i + 1 for i in changes.to_pylist())]
    for start, end in zip(starts, [*starts[1:], n], strict=True):
        yield targets[start].as_py(), table.slice(start, end - start)


def _write_partition(batches, group_rows=GROUP_ROWS):
    """mapInArrow: the rows of a partition, sorted by target, written file by file."""
    current, written = None, []
    for batch in batches:
        table = pa.Table.from_batches([batch])
        for target, rows in _runs(table):
            if current is None or str(current.target) != target:
                if current is not None:
                    written.append(current.close())
                current = _BucketFile(target, group_rows)
            current.add(rows.select(HISTORY_SCHEMA.names).cast(HISTORY_SCHEMA))
    if current is not None:
        written.append(current.close())
    yield pa.RecordBatch.from_pydict(
        {"target": [t for t, _ in written], "rows": [r for _, r in written]},
        schema=pa.schema([("target", pa.string()), ("rows", pa.int64())]),
    )


def write_files(rows: DataFrame, *, tasks) -> dict:
    """Write each row (with `target`) into its bucket file; {file: rows}. One task writes every
    file of the targets hashed to it, one after the other, so a file is whole in one task.
    Collects one row per file: bounded by the number of files, not of events."""
    ordered = rows.repartition(tasks, "target").sortWithinPartitions("target", *HISTORY_ORDER)
    written = ordered.mapInArrow(_write_partition, WRITTEN).collect()
    return {row["target"]: row["rows"] for row in written}


def fill_empty_buckets(directory, buckets):
    """An empty file for each bucket no row went to: a reader finds a file for every bucket, so
    that one missing is an error (a lost file) rather than an empty history."""
    for bucket in range(buckets):
        path = Path(directory) / bucket_name(bucket)
        if not path.exists():
            pq.write_table(HISTORY_SCHEMA.empty_table(), path, compression="zstd")


def run_history_fold(spark, params: HistoryFoldParams) -> HistoryFoldResult:
    rows = read_tagged(spark, params.lake_root, params.events, EVENT_SCHEMA)
    rows = rows.select(*HISTORY_SCHEMA.names)
    if params.generations:
        paths = [str(Path(params.lake_root) / p) for p in params.generations]
        older = spark.read.schema(spark_schema(HISTORY_SCHEMA)).parquet(*paths)
        rows = older.unionByName(rows)
    Path(params.out_dir).mkdir(parents=True, exist_ok=False)
    written = write_files(
        with_targets(rows, params.out_dir, params.buckets),
        tasks=task_count(params.rows, params.buckets),
    )
    fill_empty_buckets(params.out_dir, params.buckets)
    return HistoryFoldResult(rows=sum(written.values()), files=len(written))
