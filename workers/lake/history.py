"""The history dataset's layout: events compacted and keyed by message.

A history generation is one committed directory holding the events of a run of events commits,
spread over `buckets` files by a stable hash of the message id (`bucket_of`: CRC-32 of its UTF-8
bytes, which Spark computes the same way), each file sorted by message id in small row groups
with statistics on the id only. One message's events in a generation are therefore in one file
whose name is computed from the id, and in one or two of its row groups, which the footer's
statistics point at (workers.lake.store.message_rows): a small read, whatever the size of the
lake. Every bucket has its file, empty when no message hashes to it: a file missing is an error,
not an empty history.

Files are written by the Spark job (workers.jobs.history) and read here with pyarrow, as the
console reads a message's history on the request path (no Spark there).
"""

import math
import zlib
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa

from workers.lake.schema import EVENT_SCHEMA
from workers.lake.store import message_rows, messages_rows, read_in_threads

# A bucket file holds about this many rows, in row groups of GROUP_ROWS: a footer of eight row
# groups' metadata is read in a fraction of a millisecond, where one of thousands takes several
# (the footer is parsed whole on every open), and one group is a small read.
BUCKET_ROWS = 16_384
GROUP_ROWS = 2_048
MAX_BUCKETS = 4_096


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


def read_message(directories, message_id):
    """One message's events in the generations `directories` ([(absolute path, buckets)], in
    the order of the commits they cover), in that order and each generation's by (epoch, step,
    commit): a table of EVENT_SCHEMA."""
    tables = []
    for directory, buckets in directories:
        found = message_rows(bucket_path(directory, message_id, buckets), message_id)
        if found is not None:
            tables.append(found.select(EVENT_SCHEMA.names))
    if not tables:
        return EVENT_SCHEMA.empty_table()
    return pa.concat_tables(tables).cast(EVENT_SCHEMA)


def read_messages(directories, message_ids):
    """Several messages' events in the generations `directories` (as `read_message`): of each
    generation only the bucket files they hash to, and of those only the row groups whose id
    range holds one of them, the files read in a few threads. Rows in no particular order: a
    table of EVENT_SCHEMA."""
    wanted = sorted(set(message_ids))
    reads = []
    for directory, buckets in directories:
        by_bucket = {}
        for message_id in wanted:
            by_bucket.setdefault(bucket_of(message_id, buckets), []).append(message_id)
        reads.extend((Path(directory) / bucket_name(b), ids) for b, ids in by_bucket.items())
    found = read_in_threads(lambda read: messages_rows(*read), reads)
    tables = [table.select(EVENT_SCHEMA.names) for table in found if table is not None]
    if not tables:
        return EVENT_SCHEMA.empty_table()
    return pa.concat_tables(tables).cast(EVENT_SCHEMA)
