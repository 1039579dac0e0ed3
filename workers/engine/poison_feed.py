"""The poison list's changes as files, for delivery runs that are already running (R9: "changes
reach running workers before their next batch").

Executors run without Django, so the console publishes every committed change of the list as a
small Parquet file in one directory of the lake; a running run keeps the list it loaded at its
start current by reading the files that are newer than its cursor. This module is both sides of
that format, and nothing else: pyarrow and the standard library.

The file format. A file holds the changes with cursors in (after, upto] and is named
`<after>-<upto>.parquet` (both zero-padded to 20 digits, so names sort by `after`). It is written
under a temporary name starting with "." and renamed into place, so a reader never sees half a
file. The console's change log makes these ranges line up: writers of the list are serialized and
each one's changes take the cursors right after the previous one's, so the files chain, the
`upto` of one being the `after` of the next. Two files may overlap (a sweep republishes a range
whose file went missing); a gap means a file is late or lost.

The changes, applied in cursor order:
- added: the message id is on the list with this reason (it replaces what the list said for that
  id) and, if it has one, this body hash;
- removed: the id is off the list, and its entry's body hash with it;
- body_cleared: the entry keeps its id but no longer poisons this body hash (R9: another message
  with that body was reprocessed; also written when an entry is replaced, for its old hash).
Several entries may share a body hash: the hash poisons as long as one of them still carries it,
so a reader counts them.
"""

import logging
import os
import re
import time
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

log = logging.getLogger(__name__)

ADDED = "added"
REMOVED = "removed"
BODY_CLEARED = "body_cleared"
KINDS = (ADDED, REMOVED, BODY_CLEARED)

# How a match by body reads in a message's reason (R9, poison_match "id_or_body").
SAME_BODY = "same body as a poisoned message: "

FEED_SCHEMA = pa.schema(
    [
        ("cursor", pa.int64()),
        ("kind", pa.string()),
        ("message_id", pa.string()),
        ("body_sha256", pa.string()),
        ("reason", pa.string()),
    ]
)

_NAME = re.compile(r"^(\d{20})-(\d{20})\.parquet$")

# A gap in the files is waited for this long (the file of a transaction that committed just
# before a later one may still be being written); after that it is taken as lost and skipped:
# the next run loads the whole list anyway.
GAP_SECONDS = 120.0


def feed_file_name(after, upto):
    return f"{after:020d}-{upto:020d}.parquet"


def feed_files(directory):
    """[(after, upto, name)] of the complete feed files in `directory`, by `after`."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    files = []
    for name in names:
        match = _NAME.match(name)
        if match:
            files.append((int(match[1]), int(match[2]), name))
    files.sort()
    return files


def feed_write(directory, after, upto, tables):
    """Write the changes in (after, upto] (an iterable of FEED_SCHEMA tables, in cursor order)
    as one feed file; returns its path. Safe to repeat: the same range makes the same file."""
    os.makedirs(directory, exist_ok=True)
    final = os.path.join(directory, feed_file_name(after, upto))
    # Unique, so that two writers of one range (the committing process and a sweep) never write
    # into each other's temporary file.
    tmp = os.path.join(directory, f".{feed_file_name(after, upto)}.{uuid.uuid4().hex}.tmp")
    try:
        with pq.ParquetWriter(tmp, FEED_SCHEMA, compression="zstd") as writer:
            for table in tables:
                writer.write_table(table.cast(FEED_SCHEMA), row_group_size=64_000)
        os.replace(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return final


def feed_prune(directory, *, older_than):
    """Delete the feed files last written before `older_than` (a POSIX time); returns how many.
    Only a run that has been going longer than that could still want them."""
    removed = 0
    for _, _, name in feed_files(directory):
        path = os.path.join(directory, name)
        try:
            if os.stat(path).st_mtime < older_than:
                os.remove(path)
                removed += 1
        except FileNotFoundError:
            pass  # another sweep took it
    return removed


class PoisonFeed:
    """The poison list as a running delivery run sees it: the list it loaded at its start, kept
    current from the feed files.

    `since_cursor`: the change-log cursor the list was read at (the console's `poison_snapshot`:
    the list exactly as of that cursor). `ids`: [(message_id, reason)], one per entry.
    `hashes`: [(body_sha256, reason, entries)], one per distinct body hash with the number of
    entries that carry it. Either may be empty, to follow only what changes from now on.
    """

    def __init__(
        self, directory, since_cursor, ids=(), hashes=(), *, gap_seconds=GAP_SECONDS, clock=None
    ):
        self.directory = str(directory)
        self.cursor = int(since_cursor)
        self.gap_seconds = gap_seconds
        self.skipped = []  # [(after, upto)] of gaps given up on
        self._clock = clock or time.time
        self._ids = dict(ids)
        self._hashes = {sha: [entries, reason] for sha, reason, entries in hashes if entries > 0}

    def __len__(self):
        return len(self._ids)

    def refresh(self):
        """Apply the feed files newer than the cursor, in cursor order; returns how many changes
        were applied. Cheap when nothing is new: one directory listing."""
        files = [f for f in feed_files(self.directory) if f[1] > self.cursor]
        applied = 0
        while files:
            covering = [f for f in files if f[0] <= self.cursor < f[1]]
            if covering:
                after, upto, name = max(covering, key=lambda f: f[1])
                try:
                    table = pq.read_table(os.path.join(self.directory, name), schema=FEED_SCHEMA)
                except FileNotFoundError:
                    break  # pruned meanwhile: seen as a gap at the next refresh
                applied += self._apply(table)
                self.cursor = upto
            else:
                later = [f for f in files if f[0] > self.cursor]
                if not later:
                    break
                after, upto, name = later[0]
                if not self._late_enough(name):
                    break  # the file before it may still be on its way
                log.warning(
                    "poison feed: changes %s to %s never arrived; going on without them",
                    self.cursor + 1,
                    after,
                )
                self.skipped.append((self.cursor, after))
                self.cursor = after
            files = [f for f in files if f[1] > self.cursor]
        return applied

    def _late_enough(self, name):
        try:
            written = os.stat(os.path.join(self.directory, name)).st_mtime
        except FileNotFoundError:
            return False
        return self._clock() - written >= self.gap_seconds

    def _apply(self, table):
        table = table.filter(pc.greater(table.column("cursor"), self.cursor))
        table = table.sort_by("cursor")
        columns = [table.column(c).to_pylist() for c in FEED_SCHEMA.names[1:]]
        for kind, message_id, sha, reason in zip(*columns, strict=True):
            if kind == ADDED:
                self._ids[message_id] = reason or ""
                if sha:
                    counted = self._hashes.setdefault(sha, [0, ""])
                    counted[0] += 1
                    counted[1] = reason or ""
            else:
                if kind == REMOVED:
                    self._ids.pop(message_id, None)
                if sha and sha in self._hashes:
                    counted = self._hashes[sha]
                    counted[0] -= 1
                    if counted[0] <= 0:
                        del self._hashes[sha]
        return table.num_rows

    def reason(self, message_id, body_sha256=None, *, by_body):
        """The reason a message is on the list, or None if it is not: by its id, or, when
        `by_body` (the queue's poison_match is id_or_body), by its body's hash. A reason may be
        empty text: test the result against None."""
        reason = self._ids.get(message_id)
        if reason is not None:
            return reason
        if by_body and body_sha256:
            counted = self._hashes.get(body_sha256)
            if counted is not None:
                return f"{SAME_BODY}{counted[1]}"
        return None
