"""The frozen set numbered with its chunks: each step of a progressive redrive is one chunk, then
`chunk_size` ids a chunk, the same on every attempt (a chunk's idempotency key always names the
same ids). Written once beside the plan; the console reads a chunk's ids back from it."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CHUNK_IDS_SCHEMA = pa.schema([("message_id", pa.string()), ("chunk", pa.int32())])


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


def frozen_number(id_batches, path, *, chunk_size, steps=()):
    """The one entry point of the numbering: write_chunk_ids, and the chunks it makes. Returns
    (ids, chunks)."""
    count = write_chunk_ids(id_batches, path, chunk_size=chunk_size, steps=steps)
    return count, chunk_count(count, chunk_size=chunk_size, steps=steps)
