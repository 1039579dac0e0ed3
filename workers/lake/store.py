"""Where the lake's files live and how new output directories are named.

Every writer puts its output in a new, uniquely named directory and never touches existing files;
the output becomes visible only when the console DB records a commit for it (console.lake). A
directory without a commit is invisible garbage a crash left behind.
"""

import bisect
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from workers.lake.schema import SCHEMAS

ROW_GROUP_BYTES = 4 * 1024 * 1024
# Threads of read_in_threads: beyond a few, more threads on a small machine only queue up.
READ_THREADS = min(8, 2 * (os.cpu_count() or 1))


def row_group_rows(table):
    """Rows per row group so that each holds about ROW_GROUP_BYTES: a reader after one message
    (its rows sorted by id, so row-group statistics skip the others) reads one small group, not
    64,000 bodies."""
    if table.num_rows == 0:
        return 64_000
    per_row = max(1, table.nbytes // table.num_rows)
    return max(16, min(64_000, ROW_GROUP_BYTES // per_row))


class Lake:
    def __init__(self, root):
        self.root = Path(root)

    def new_dir(self, dataset, label=""):
        """A fresh relative path for a writer's output: dataset/YYYYMMDD/<label>-<uuid>."""
        day = datetime.now(UTC).strftime("%Y%m%d")
        name = f"{label}-{uuid.uuid4().hex}" if label else uuid.uuid4().hex
        return f"{dataset}/{day}/{name}"

    def path(self, relpath):
        return str(self.root / relpath)

    def paths(self, relpaths):
        return [self.path(p) for p in relpaths]

    def write_arrow(self, table, relpath, *, rows_per_file=500_000):
        """Write an arrow table as Parquet files into relpath (which must not exist yet)."""
        target = self.root / relpath
        target.mkdir(parents=True, exist_ok=False)
        group_rows = row_group_rows(table)
        for index, start in enumerate(range(0, max(table.num_rows, 1), rows_per_file)):
            part = table.slice(start, rows_per_file)
            tmp = target / f".part-{index:05d}.parquet.tmp"
            pq.write_table(part, tmp, compression="zstd", row_group_size=group_rows)
            os.replace(tmp, target / f"part-{index:05d}.parquet")
        return relpath

    def write_stream(self, tables, relpath, *, schema):
        """Write an iterator of arrow tables into relpath as one Parquet file, a table at a
        time (memory bounded by one table). Returns the number of rows written."""
        target = self.root / relpath
        target.mkdir(parents=True, exist_ok=False)
        tmp = target / ".part-00000.parquet.tmp"
        rows = 0
        with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            for table in tables:
                writer.write_table(table, row_group_size=64_000)
                rows += table.num_rows
        os.replace(tmp, target / "part-00000.parquet")
        return rows

    def read_arrow(self, dataset, relpaths, *, columns=None, filter=None):
        """Read committed directories of one dataset with pyarrow (no Spark)."""
        schema = SCHEMAS[dataset]
        existing = [self.path(p) for p in relpaths]
        if not existing:
            return schema.empty_table() if columns is None else schema.empty_table().select(columns)
        # One dataset per directory, unioned: pyarrow takes a list of files, not of folders.
        # Spark's _SUCCESS and .crc files are skipped by pyarrow's default ignore prefixes.
        parts = [pads.dataset(p, schema=schema, format="parquet") for p in existing]
        ds = parts[0] if len(parts) == 1 else pads.dataset(parts)
        return ds.to_table(columns=columns, filter=filter)

    def read_message(self, dataset, relpaths, message_id):
        """One message's rows in committed directories of one dataset, in the order of
        `relpaths`: as `read_arrow` with a filter on the id, in a fraction of its time on small
        commits (see `message_rows`)."""
        schema = SCHEMAS[dataset]
        tables = []
        for relpath in relpaths:
            for path in parquet_files(self.root / relpath):
                found = message_rows(path, message_id)
                if found is not None:
                    tables.append(conform(found, schema))
        return pa.concat_tables(tables) if tables else schema.empty_table()


def parquet_files(directory):
    """The data files of a committed directory, in name order (Spark's _SUCCESS, .crc and our
    hidden temporary files left out). A committed directory that is not there raises
    FileNotFoundError, as a dataset read does."""
    names = os.listdir(directory)
    return [
        os.path.join(directory, name)
        for name in sorted(names)
        if name.endswith(".parquet") and not name.startswith((".", "_"))
    ]


def message_rows(path, message_id):
    """The rows of one message in one Parquet file, or None. Only the row groups whose id
    statistics admit it are looked at, and of each only the id column is read first: most
    small commits do not hold a given message, and the other columns (reasons, stacks) are
    most of a row group's bytes. (A history read opens a few dozen files: each compute call
    and each column read saved is a good part of a file's cost.)"""
    parquet = pq.ParquetFile(path)
    metadata = parquet.metadata
    column = metadata.schema.names.index("message_id")
    tables = []
    for group in range(metadata.num_row_groups):
        stats = metadata.row_group(group).column(column).statistics
        if stats is not None and stats.has_min_max and not stats.min <= message_id <= stats.max:
            continue
        ids = parquet.read_row_group(group, columns=["message_id"], use_threads=False).column(0)
        if pc.index(ids, message_id).as_py() < 0:
            continue
        rows = parquet.read_row_group(group, use_threads=False)
        tables.append(rows.filter(pc.equal(rows.column("message_id"), message_id)))
    return pa.concat_tables(tables) if tables else None


def messages_rows(path, message_ids, columns=None):
    """The rows of several messages (`message_ids`, sorted) in one Parquet file, or None: as
    `message_rows`, a row group looked at only when its id range holds one of them. `columns`:
    those only (message_id among them), e.g. a message's row but its body."""
    parquet = pq.ParquetFile(path)
    metadata = parquet.metadata
    column = metadata.schema.names.index("message_id")
    wanted = pa.array(message_ids, pa.string())
    tables = []
    for group in range(metadata.num_row_groups):
        stats = metadata.row_group(group).column(column).statistics
        if stats is not None and stats.has_min_max:
            first = bisect.bisect_left(message_ids, stats.min)
            if first == len(message_ids) or message_ids[first] > stats.max:
                continue
        ids = parquet.read_row_group(group, columns=["message_id"], use_threads=False).column(0)
        if not pc.any(pc.is_in(ids, value_set=wanted)).as_py():
            continue
        rows = parquet.read_row_group(group, columns=columns, use_threads=False)
        tables.append(rows.filter(pc.is_in(rows.column("message_id"), value_set=wanted)))
    return pa.concat_tables(tables) if tables else None


def messages_rows_in(directories, message_ids, columns=None):
    """[(directory, rows)] of every data file of the committed `directories` holding one of
    `message_ids` (sorted), in the order of the directories and their files: `messages_rows` of
    each file, the files read in a few threads."""
    if not message_ids:
        return []
    files = [(directory, path) for directory in directories for path in parquet_files(directory)]
    found = read_in_threads(lambda file: messages_rows(file[1], message_ids, columns), files)
    return [(d, rows) for (d, _), rows in zip(files, found, strict=True) if rows is not None]


def read_in_threads(read, items):
    """`read` of each of `items`, in a few threads, in the order of `items`. For reads of many
    small files: pyarrow lets go of the GIL while it reads and decompresses, so the files'
    reads overlap."""
    items = list(items)
    if len(items) < 2:
        return [read(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(READ_THREADS, len(items))) as pool:
        return list(pool.map(read, items))


def conform(table, schema):
    """A table read from a file in `schema`'s columns and types, as a dataset read with that
    schema gives it: a column the file lacks is null; Spark's timestamps (INT96 nanoseconds,
    no zone) are UTC microseconds."""
    columns = []
    for field in schema:
        if field.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, field.type))
            continue
        values = table.column(field.name)
        if pa.types.is_timestamp(field.type) and values.type != field.type:
            values = values.cast(pa.timestamp(values.type.unit, tz=field.type.tz))
            values = values.cast(field.type, safe=False)
        columns.append(values.cast(field.type))
    return pa.Table.from_arrays(columns, schema=schema)
