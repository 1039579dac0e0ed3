"""The shared poison list (R9): every write to it, with its change log and its feed.

Every change to PoisonEntry writes PoisonChange rows in the same transaction: the engine's
quarantines (`poison_entries_put`, in bulk), outside reports (`poison_report`), an administrator's
removal (`poison_remove`) and a reprocess (`poison_reprocessed`, in a decision's chunk). A
change's id is the cursor consumers keep. Writers hold the list's lock to the end of their
transaction, so ids commit in order: a consumer that has read up to cursor N never sees a change
below N appear later.

Once such a transaction commits, its changes are published as one Parquet file in the lake
(workers.engine.poison_feed) for delivery runs already running: they started with
`poison_snapshot()` and follow the files from its cursor.

Lock order, to stay clear of deadlocks: the lake's commit lock, then this one, then the audit
trail's (every caller takes them in that order).
"""

import contextlib
import functools
import json
import logging
import time
from dataclasses import dataclass
from datetime import timedelta

import pyarrow as pa
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from console.advisory_locks import xact_lock
from console.audit.services import audit_record
from console.delivery.models import PoisonChange, PoisonEntry
from console.ingest.models import MessageKey
from console.lake.services import lake
from console.sql import joins_by_key
from workers.engine.poison_feed import (
    FEED_SCHEMA,
    feed_files,
    feed_prune,
    feed_write,
)

log = logging.getLogger(__name__)

POISON_LIST_LOCK = 0x504F4953  # an arbitrary, fixed advisory-lock key for the poison list
FEED_DIR = "poison-feed"  # under the lake's root
FEED_KEEP = timedelta(days=1)
_STAGED = "poison_staged"
_CLEARED = "poison_bodies_cleared"
# A SQLite statement takes the staged rows as one JSON parameter of this many.
_STAGE_ROWS = 50_000
_PUBLISH_ROWS = 50_000

_ENTRIES = PoisonEntry._meta.db_table
_CHANGES = PoisonChange._meta.db_table
_KEYS = MessageKey._meta.db_table
_INSERT_CHANGE = (
    f"INSERT INTO {_CHANGES} (kind, message_id, body_sha256, queue, reason, source, at)"
)


def poison_feed_dir():
    """Where the feed files are: what a delivery run's PoisonFeed reads."""
    return lake().path(FEED_DIR)


def poison_list_lock():
    """Hold the poison list's lock until the caller's transaction ends. On PostgreSQL an
    advisory lock serializes the list's writers; SQLite serializes writers already (the
    console's transactions begin IMMEDIATE)."""
    xact_lock(POISON_LIST_LOCK, "the poison list's lock")


def poison_cursor():
    """The newest change's cursor (0 before the first change)."""
    return PoisonChange.objects.aggregate(top=Max("id"))["top"] or 0


@contextlib.contextmanager
def _changes_written():
    """Inside the caller's transaction: take the lock, and once the transaction commits,
    publish the changes written in the block (they hold the cursors just after the newest one
    before it, the lock sees to that)."""
    poison_list_lock()
    after = poison_cursor()
    yield
    upto = poison_cursor()
    if upto > after:
        transaction.on_commit(functools.partial(_feed_publish, after, upto), robust=True)


def _at(now):
    """A timestamp parameter for the raw statements below."""
    return PoisonChange._meta.get_field("at").get_db_prep_save(now, connection)


def _ts():
    # PostgreSQL does not cast a text parameter to a timestamp by itself in INSERT ... SELECT;
    # SQLite stores timestamps as text and must not be told otherwise.
    return "CAST(%s AS timestamp with time zone)" if connection.vendor == "postgresql" else "%s"


# --- Writes -------------------------------------------------------------------------------------


@contextlib.contextmanager
def _entries_staged(rows):
    """Stage (message_id, queue, reason, body_sha256) rows in a temporary table for the
    duration; yields its name. COPY on PostgreSQL, JSON parameters on SQLite."""
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {_STAGED}")
        cursor.execute(
            f"CREATE TEMPORARY TABLE {_STAGED} (message_id varchar(200) PRIMARY KEY, "
            "queue varchar(100) NOT NULL, reason text NOT NULL, body_sha256 varchar(64) NOT NULL)"
        )
        if connection.vendor == "postgresql":
            with cursor.copy(
                f"COPY {_STAGED} (message_id, queue, reason, body_sha256) FROM STDIN"
            ) as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            for start in range(0, len(rows), _STAGE_ROWS):
                cursor.execute(
                    f"INSERT INTO {_STAGED} (message_id, queue, reason, body_sha256) "  # noqa: S608
                    "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), "
                    "json_extract(value, '$[2]'), json_extract(value, '$[3]') FROM json_each(%s)",
                    [json.dumps(rows[start : start + _STAGE_ROWS])],
                )
        try:
            yield _STAGED
        finally:
            cursor.execute(f"DROP TABLE IF EXISTS {_STAGED}")


def poison_entries_put(*, entries, source):
    """Put entries on the list: [(message_id, queue, reason, body_sha256)], the last one of an
    id winning. Set-based, for the engine's million quarantines as for one report.

    An entry replaces what the list said for its id (its reason, queue, source and hash), except
    that a new entry without a hash keeps the hash already listed for that id. An entry that
    changes nothing writes nothing. The change log gets an "added" row per entry put and, for a
    replaced entry that had a hash, a "body cleared" row for that hash first (a consumer that
    counts how many entries carry a hash stays right). Returns how many entries were put."""
    latest = {}
    for message_id, queue, reason, sha in entries:
        latest[message_id] = [message_id, queue or "", reason or "", sha or ""]
    if not latest:
        return 0
    now = timezone.now()
    ts = _ts()
    with (
        transaction.atomic(),
        _changes_written(),
        _entries_staged(list(latest.values())) as s,
        connection.cursor() as cursor,
    ):
        cursor.execute(
            f"UPDATE {s} SET body_sha256 = COALESCE((SELECT e.body_sha256 FROM {_ENTRIES} e "  # noqa: S608
            f"WHERE e.message_id = {s}.message_id), '') WHERE body_sha256 = ''"
        )
        cursor.execute(
            f"DELETE FROM {s} WHERE EXISTS (SELECT 1 FROM {_ENTRIES} e "  # noqa: S608
            f"WHERE e.message_id = {s}.message_id AND e.body_sha256 = {s}.body_sha256 "
            f"AND e.queue = {s}.queue AND e.reason = {s}.reason AND e.source = %s)",
            [source],
        )
        # The staged rows drive the joins, each finding its entry by the unique index
        # (SQLite would otherwise scan the list; PostgreSQL plans it the same either way).
        cursor.execute(
            f"{_INSERT_CHANGE} SELECT %s, e.message_id, e.body_sha256, e.queue, %s, %s, {ts} "  # noqa: S608
            f"FROM {s} x CROSS JOIN {_ENTRIES} e "
            "WHERE e.message_id = x.message_id AND e.body_sha256 <> ''",
            [PoisonChange.BODY_CLEARED, "replaced by a newer entry", source, _at(now)],
        )
        # WHERE true: SQLite's parser would take ON CONFLICT for a join's constraint.
        cursor.execute(
            f"INSERT INTO {_ENTRIES} (message_id, body_sha256, queue, reason, source, "  # noqa: S608
            f"added_at) SELECT message_id, body_sha256, queue, reason, %s, {ts} FROM {s} "
            "WHERE true ON CONFLICT (message_id) DO UPDATE SET "
            "body_sha256 = excluded.body_sha256, queue = excluded.queue, "
            "reason = excluded.reason, source = excluded.source",
            [source, _at(now)],
        )
        cursor.execute(
            f"{_INSERT_CHANGE} SELECT %s, message_id, body_sha256, queue, reason, %s, {ts} "  # noqa: S608
            f"FROM {s} ORDER BY message_id",
            [PoisonChange.ADDED, source, _at(now)],
        )
        cursor.execute(f"SELECT COUNT(*) FROM {s}")  # noqa: S608
        return cursor.fetchone()[0]


def poison_report(*, actor, message_id, reason, queue="", body_sha256=""):
    """An application reports a message it failed on (the AMPS pattern): the entry is put on the
    list with the caller's user name as its source, and the report is audited. Returns
    (entry, created)."""
    source = actor.get_username()
    with transaction.atomic():
        poison_list_lock()
        created = not PoisonEntry.objects.filter(message_id=message_id).exists()
        poison_entries_put(entries=[(message_id, queue, reason, body_sha256)], source=source)
        entry = PoisonEntry.objects.get(message_id=message_id)
        audit_record(
            actor=actor,
            action="poison.reported",
            target_type="message",
            target_id=message_id,
            details={
                "message_id": message_id,
                "body_sha256": body_sha256,
                "queue": queue,
                "reason": reason,
                "created": created,
            },
        )
    return entry, created


def poison_remove(*, actor, message_id):
    """An administrator takes one entry off the list; audited. Other entries with the same body
    hash keep it (only a reprocess clears a body, R9). Returns the removed entry, or None if the
    id was not on the list."""
    with transaction.atomic(), _changes_written():
        entry = PoisonEntry.objects.filter(message_id=message_id).first()
        if entry is None:
            return None
        who = actor.get_username()
        PoisonChange.objects.create(
            kind=PoisonChange.REMOVED,
            message_id=entry.message_id,
            body_sha256=entry.body_sha256,
            queue=entry.queue,
            reason=f"removed by {who}",
            source=who,
            at=timezone.now(),
        )
        entry.delete()
        audit_record(
            actor=actor,
            action="poison.removed",
            target_type="message",
            target_id=message_id,
            details={
                "message_id": entry.message_id,
                "body_sha256": entry.body_sha256,
                "queue": entry.queue,
                "reason": entry.reason,
                "source": entry.source,
            },
        )
    return entry


def poison_reprocessed(*, staged, request_id, edited_bodies=()):
    """R9, R13: reprocessed messages come off the list by id and by body. Their entries are
    removed, and every body hash they stand for stops poisoning: it is cleared on every other
    entry, which stays listed by id (those messages stay quarantined).

    A reprocessed message's hashes: its entry's (what the list holds, whoever reported it), its
    original body's from ingest (MessageKey: the body an unedited reprocess delivers again, and
    the one the engine listed), and its edited body's (`edited_bodies`: the SHA-256 of each
    body an edit sends a message back with). `staged`: a temporary table of the chunk's
    message ids (console.readmodels.deltas' decided_staged). Set-based, inside the chunk's
    transaction."""
    now = timezone.now()
    source = f"request {request_id}"
    with (
        transaction.atomic(),
        _changes_written(),
        connection.cursor() as cursor,
        joins_by_key(cursor),
    ):
        cursor.execute(f"DROP TABLE IF EXISTS {_CLEARED}")
        cursor.execute(f"CREATE TEMPORARY TABLE {_CLEARED} (body_sha256 varchar(64) PRIMARY KEY)")
        try:
            _reprocessed_entries_remove(
                cursor, staged, [PoisonChange.REMOVED, f"reprocessed ({source})", source, _at(now)]
            )
            cursor.executemany(
                f"INSERT INTO {_CLEARED} (body_sha256) SELECT %s WHERE NOT EXISTS "  # noqa: S608
                f"(SELECT 1 FROM {_CLEARED} WHERE body_sha256 = %s)",
                [[sha256, sha256] for sha256 in sorted(set(edited_bodies))],
            )
            _cleared_bodies_unlist(
                cursor,
                [
                    PoisonChange.BODY_CLEARED,
                    f"a message with this body was reprocessed ({source})",
                    source,
                    _at(now),
                ],
            )
        finally:
            cursor.execute(f"DROP TABLE IF EXISTS {_CLEARED}")


def _cleared_bodies_unlist(cursor, cleared):
    """Every other entry with a cleared body hash loses it (and stays listed by id), each in
    the change log. `cleared`: the change rows' (kind, reason, source, at)."""
    ts = _ts()
    if connection.vendor == "postgresql":
        # One pass over the entries with those hashes, not one to log them and one to clear them.
        cursor.execute(
            f"WITH unlisted AS (UPDATE {_ENTRIES} e SET body_sha256 = '' FROM {_CLEARED} c "  # noqa: S608
            "WHERE e.body_sha256 = c.body_sha256 "
            "RETURNING e.message_id, c.body_sha256 AS cleared, e.queue) "
            f"{_INSERT_CHANGE} SELECT %s, message_id, cleared, queue, %s, %s, {ts} FROM unlisted",
            cleared,
        )
        return
    cursor.execute(
        f"{_INSERT_CHANGE} SELECT %s, e.message_id, e.body_sha256, e.queue, %s, %s, {ts} "  # noqa: S608
        f"FROM {_CLEARED} c CROSS JOIN {_ENTRIES} e WHERE e.body_sha256 = c.body_sha256",
        cleared,
    )
    cursor.execute(
        f"UPDATE {_ENTRIES} SET body_sha256 = '' WHERE body_sha256 IN "  # noqa: S608
        f"(SELECT body_sha256 FROM {_CLEARED})"
    )


def _reprocessed_entries_remove(cursor, staged, removed):
    """The staged messages' entries off the list, each removal in the change log, and the body
    hashes they stand for (their entries' and their ingest keys') into the cleared table.
    `removed`: the change rows' (kind, reason, source, at)."""
    ts = _ts()
    keys_hashes = (
        f"SELECT k.body_sha256 FROM {staged} s CROSS JOIN {_KEYS} k "  # noqa: S608
        "WHERE k.message_id = s.message_id AND k.body_sha256 <> ''"
    )
    if connection.vendor == "postgresql":
        # One pass over the entries (deleted, logged, their hashes kept) where three statements
        # would each find them again: a chunk of a large reprocess removes 25,000.
        cursor.execute(
            f"WITH gone AS (DELETE FROM {_ENTRIES} e USING {staged} s "  # noqa: S608
            "WHERE e.message_id = s.message_id RETURNING e.message_id, e.body_sha256, e.queue), "
            f"removed AS ({_INSERT_CHANGE} SELECT %s, message_id, body_sha256, queue, %s, %s, "
            f"{ts} FROM gone) INSERT INTO {_CLEARED} (body_sha256) SELECT body_sha256 FROM gone "
            f"WHERE body_sha256 <> '' UNION {keys_hashes}",
            removed,
        )
        return
    cursor.execute(
        f"INSERT INTO {_CLEARED} (body_sha256) "  # noqa: S608
        f"SELECT e.body_sha256 FROM {staged} s CROSS JOIN {_ENTRIES} e "
        f"WHERE e.message_id = s.message_id AND e.body_sha256 <> '' UNION {keys_hashes}"
    )
    cursor.execute(
        f"{_INSERT_CHANGE} SELECT %s, e.message_id, e.body_sha256, e.queue, %s, %s, {ts} "  # noqa: S608
        f"FROM {staged} s CROSS JOIN {_ENTRIES} e WHERE e.message_id = s.message_id",
        removed,
    )
    cursor.execute(
        f"DELETE FROM {_ENTRIES} WHERE message_id IN (SELECT message_id FROM {staged})"  # noqa: S608
    )


# --- The list as a delivery run loads it ----------------------------------------------------------


@dataclass(frozen=True)
class PoisonSnapshot:
    """The list as of one cursor (the whole list, or what a run of known messages needs of it).
    `ids`: [(message_id, reason)], one per entry; `hashes`: [(body_sha256, reason, entries)],
    one per distinct hash, with the reason of the newest entry that carries it and how many
    entries do."""

    ids: list
    hashes: list
    cursor: int


def _snapshot_read(message_ids=None):
    ids, counts, reasons = [], {}, {}
    if message_ids is None:
        rows = (
            PoisonEntry.objects.order_by("id")
            .values_list("message_id", "body_sha256", "reason")
            .iterator(chunk_size=10_000)
        )
    else:
        wanted = sorted(set(message_ids))
        found = []
        for start in range(0, len(wanted), _IDS_PER_QUERY):
            batch = wanted[start : start + _IDS_PER_QUERY]
            found += PoisonEntry.objects.filter(message_id__in=batch).values_list(
                "id", "message_id", "reason"
            )
        rows = [(message_id, "", reason) for _, message_id, reason in sorted(found)]
    for message_id, sha, reason in rows:
        ids.append((message_id, reason))
        if sha:
            counts[sha] = counts.get(sha, 0) + 1
            reasons[sha] = reason
    return ids, [(sha, reasons[sha], n) for sha, n in counts.items()]


# Under SQLite's limit of host parameters in one statement.
_IDS_PER_QUERY = 900


def poison_snapshot(*, message_ids=None, attempts=3):
    """The list exactly as of a cursor, for a PoisonFeed to follow from there.

    `message_ids`: only what a run that delivers those messages and matches none by body needs
    of it, their entries (no body hash): a small run's cost then follows its messages, not the
    list, which grows with every permanent failure (a million at 10M messages with 10 %
    poison: seconds to read whole).

    Read without holding up the list's writers when it can be: the cursor before and after the
    read are the same, so no change committed in between. When the list keeps changing (a bulk
    reprocess commits a chunk every fraction of a second), it is read under the lock."""
    for _ in range(attempts):
        before = poison_cursor()
        ids, hashes = _snapshot_read(message_ids)
        if poison_cursor() == before:
            return PoisonSnapshot(ids, hashes, before)
    with transaction.atomic():
        poison_list_lock()
        cursor = poison_cursor()
        ids, hashes = _snapshot_read(message_ids)
        return PoisonSnapshot(ids, hashes, cursor)


# --- The feed -------------------------------------------------------------------------------------


def _feed_tables(after, upto):
    changes = PoisonChange.objects.order_by("id").values_list(
        "id", "kind", "message_id", "body_sha256", "reason"
    )
    start = after
    while start < upto:
        rows = list(changes.filter(id__gt=start, id__lte=upto)[:_PUBLISH_ROWS])
        if not rows:
            return
        yield pa.Table.from_arrays(
            [pa.array(column) for column in zip(*rows, strict=True)], schema=FEED_SCHEMA
        )
        start = rows[-1][0]


def _feed_publish(after, upto):
    """Write the changes with cursors in (after, upto] as one feed file."""
    started = time.perf_counter()
    path = feed_write(poison_feed_dir(), after, upto, _feed_tables(after, upto))
    log.debug("poison feed: %s written in %.3f s", path, time.perf_counter() - started)


def poison_feed_sweep(*, now=None):
    """Delete the feed files older than FEED_KEEP, and write again any range of changes younger
    than that whose file is missing (its process died between the commit and the file).
    Returns (files deleted, files written). The lease sweeper runs it."""
    now = now or timezone.now()
    directory = poison_feed_dir()
    deleted = feed_prune(directory, older_than=(now - FEED_KEEP).timestamp())
    floor = PoisonChange.objects.filter(at__lt=now - FEED_KEEP).aggregate(top=Max("id"))["top"] or 0
    covered, missing = floor, []
    for after, upto, _ in feed_files(directory):
        if upto <= covered:
            continue
        if after > covered:
            missing.append((covered, after))
        covered = upto
    top = poison_cursor()
    if top > covered:
        missing.append((covered, top))
    for after, upto in missing:
        log.warning("poison feed: writing changes %s to %s again", after + 1, upto)
        _feed_publish(after, upto)
    return deleted, len(missing)
