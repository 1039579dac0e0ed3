"""The history dataset's layout: events compacted and keyed by message.

A history generation is one committed directory holding the events of a run of events commits,
spread over `buckets` files by a stable hash of the message id (`bucket_of`: CRC-32 of its UTF-8
bytes, which Spark computes the same way), each file sorted by message id in small row groups
with statistics on the id only. One message's events in a generation are therefore in one file
whose name is computed from the id, and in one or two of its row groups, which the footer's
statistics point at: a read of a few kilobytes, whatever the size of the lake.

Files are written by the Spark job (workers.jobs.history) and read here with pyarrow, as the
console reads a message's history on the request path (no Spark there).
"""

import math
import zlib
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from workers.lake.schema import EVENT_SCHEMA, HISTORY_SCHEMA

# A bucket file holds about this many rows, in row groups of GROUP_ROWS: a footer of eight row
# groups' metadata is read in a fraction of a millisecond, where one of thousands takes several
# (the footer is parsed whole on every open), and one group is a small read.
BUCKET_ROWS = 16_384
GROUP_ROWS = 2_048
MAX_BUCKETS = 4_096
ID_COLUMN = HISTORY_SCHEMA.get_field_index("message_id")


class Generation(NamedTuple):
    """A committed history generation: the events of the events commits after `after` up to
    `upto`, `rows` of them in `buckets` files (path relative to the lake's root)."""

    id: int
    path: str
    rows: int
    buckets: int
    after: int
    upto: int


def buckets_for(rows):
    """How many bucket files a generation of `rows` events is spread over."""
    return max(1, min(MAX_BUCKETS, math.ceil(rows / BUCKET_ROWS)))


def bucket_of(message_id, buckets):
    return zlib.crc32(message_id.encode()) % buckets


def bucket_name(bucket):
    return f"bucket-{bucket:05d}.parquet"


def bucket_path(directory, message_id, buckets):
    return Path(directory) / bucket_name(bucket_of(message_id, buckets))


def _groups_holding(metadata, message_id):
    """The row groups whose message-id range holds `message_id`. The file is sorted by id, so
    the groups' ranges are in order: a binary search finds the first one that may hold it. A
    group without statistics may hold anything: it is read."""
    count = metadata.num_row_groups

    def bounds(i):
        stats = metadata.row_group(i).column(ID_COLUMN).statistics
        if stats is None or not stats.has_min_max:
            return None
        return stats.min, stats.max

    lo, hi = 0, count
    while lo < hi:
        mid = (lo + hi) // 2
        found = bounds(mid)
        if found is not None and found[1] < message_id:
            lo = mid + 1
        else:
            hi = mid
    groups = []
    for i in range(lo, count):
        found = bounds(i)
        if found is not None and found[0] > message_id:
            break
        groups.append(i)
    return groups


def read_message(directories, message_id):
    """One message's events in the generations `directories` ([(absolute path, buckets)], in
    the order of the commits they cover), with the events' columns, in that order and each
    generation's rows by (epoch, step, commit): a table of EVENT_SCHEMA."""
    tables = []
    for directory, buckets in directories:
        try:
            parquet = pq.ParquetFile(bucket_path(directory, message_id, buckets))
        except FileNotFoundError:
            continue  # no message of the generation hashes to this bucket
        groups = _groups_holding(parquet.metadata, message_id)
        if not groups:
            continue
        table = parquet.read_row_groups(groups, columns=EVENT_SCHEMA.names, use_threads=False)
        tables.append(table.filter(pc.equal(table.column("message_id"), message_id)))
    if not tables:
        return EVENT_SCHEMA.empty_table()
    return pa.concat_tables(tables).cast(EVENT_SCHEMA)
