"""Ingest: messages come in through the API, the inbox folder and `manage.py ingest`, and every
one of those goes through `messages_ingest`.

A record is checked (console.ingest.records: id, queue, body, content type, headers, conversation
id, sender), then deduplicated against MessageKey: the same id with the same body is a duplicate
and a no-op, the same id with another body is refused. Accepted messages are appended to the
lake's `messages` dataset with an initial TBDL event each in `events` (R1).

The lake is written here with pyarrow, not Spark. ARCHITECTURE says only Spark jobs write the lake;
ingest is the deliberate exception, because ingest runs in the web process (which never starts a
JVM) and in the inbox scanner, and a JVM round trip per API call would cost more than the write.
The commit protocol is the same as for Spark output: each chunk goes to new, uniquely named
directories that become visible only when their commit rows are recorded, in one transaction with
the MessageKey rows of the chunk. A crash before that commit leaves invisible directories and no
keys, so sending the same messages again ingests them.

Records are taken in chunks (CHUNK_RECORDS, or CHUNK_BYTES of bodies), one lake commit per chunk,
so a file of a million lines is streamed and a failure loses at most the chunk in progress.
"""

import fcntl
import hashlib
import logging
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from console.ingest.files import SUFFIXES, FileUnreadable, Unreadable, file_records
from console.ingest.models import InboxFile, MessageKey
from console.ingest.records import RecordRefused, record_check
from console.ingest.selectors import inbox_file_get, message_keys_body_hashes, queue_names
from console.ingest.signals import messages_arrived
from console.lake.services import lake, lake_commit_record
from console.queues.services import queue_intake_record
from workers.engine.states import TBDL
from workers.lake.schema import EVENT_SCHEMA, MESSAGE_SCHEMA, NEW_MESSAGE_COLUMNS

log = logging.getLogger(__name__)

CHUNK_RECORDS = 50_000
CHUNK_BYTES = 128 * 1024 * 1024
# A result keeps this many errors (and counts them all); a file of a million bad lines would
# otherwise hold a million error objects.
ERRORS_KEPT = 1000
REASON_INGESTED = "ingested"


@dataclass(frozen=True)
class IngestError:
    """One refused record: where it was (`unit` "index" for an API batch, counted from 0; "line",
    "row" or "record" in a file, counted from 1; "file" when the whole file was unreadable), its
    id when it had a usable one, and what a person should know."""

    position: int | None
    message: str
    message_id: str | None = None
    unit: str = "index"

    def as_dict(self):
        return {self.unit: self.position, "id": self.message_id, "error": self.message}

    def __str__(self):
        where = self.unit if self.position is None else f"{self.unit} {self.position}"
        if self.message_id is not None and self.message_id not in self.message:
            where = f"{where} (id {self.message_id})"
        return f"{where}: {self.message}"


@dataclass
class IngestResult:
    """What became of a batch. Every record is counted once: accepted (written to the lake),
    duplicate (already there with the same body) or refused (an error says why)."""

    accepted: int = 0
    duplicates: int = 0
    refused: int = 0
    errors: list = field(default_factory=list)
    # Ids of the `messages` lake commits made, one per chunk that accepted something.
    commits: list = field(default_factory=list)
    errors_kept: int | None = ERRORS_KEPT

    def refuse(self, error):
        self.refused += 1
        if self.errors_kept is None or len(self.errors) < self.errors_kept:
            self.errors.append(error)


# --- The batch ----------------------------------------------------------------------------------


def messages_ingest(
    *, records, source, numbered_by=None, errors_kept=ERRORS_KEPT, from_source=False
):
    """Check, deduplicate and append messages to the lake; return an IngestResult.

    `records` is an iterable of record dicts, each positioned by its index in the batch (from 0).
    With `numbered_by` ("line", "row", "record"), it yields `(number, record)` pairs instead, where
    record may be an `Unreadable` for a line that could not be read. `source` names who sent the
    messages ("api:alice", "inbox:orders.jsonl") and becomes the actor of their TBDL events.
    `errors_kept` caps the errors listed (None: all); `refused` always counts them all.
    `from_source`: the records are a broker source's (console.ingest.consumers), which may
    carry the source's records of each message in `own_headers` (R18: no other route may).
    """
    result = IngestResult(errors_kept=errors_kept)
    unit = numbered_by or "index"
    items = enumerate(records) if numbered_by is None else records
    queues = queue_names()
    limit = settings.MAX_BODY_BYTES
    chunk, chunk_bytes = [], 0
    for position, record in items:
        if type(record) is Unreadable:
            result.refuse(IngestError(position, record.reason, None, unit))
            continue
        try:
            row = record_check(record, queues, limit, from_source)
        except RecordRefused as exc:
            result.refuse(IngestError(position, exc.message, exc.message_id, unit))
            continue
        chunk.append((position, row))
        chunk_bytes += len(row[2])
        if len(chunk) >= CHUNK_RECORDS or chunk_bytes >= CHUNK_BYTES:
            _chunk_ingest(chunk, source=source, unit=unit, result=result)
            chunk, chunk_bytes = [], 0
    if chunk:
        _chunk_ingest(chunk, source=source, unit=unit, result=result)
    # A chunk's dedup errors arrive after the check errors of its later lines: put them in order.
    result.errors.sort(key=lambda e: -1 if e.position is None else e.position)
    return result


def _chunk_ingest(chunk, *, source, unit, result):
    for attempt in (1, 2):
        fresh, duplicates, conflicts = _chunk_dedup(chunk, unit=unit)
        if fresh:
            try:
                result.commits.append(_chunk_commit(fresh, source=source))
            except IntegrityError:
                if attempt == 2:
                    raise
                # Another ingest took some of these ids since we looked: look again.
                log.info("ingest from %s raced another ingest; checking the chunk again", source)
                continue
        result.accepted += len(fresh)
        result.duplicates += duplicates
        for error in conflicts:
            result.refuse(error)
        return


def _chunk_dedup(chunk, *, unit):
    """(rows to write, duplicate count, errors) for one chunk, against MessageKey and itself."""
    known = message_keys_body_hashes(ids={row[0] for _, row in chunk})
    taken = {}
    fresh, duplicates, conflicts = [], 0, []
    for position, row in chunk:
        message_id, sha = row[0], row[3]
        prior = known.get(message_id) or taken.get(message_id)
        if prior is None:
            taken[message_id] = sha
            fresh.append(row)
        elif prior == sha:
            duplicates += 1
        else:
            conflicts.append(
                IngestError(
                    position,
                    f"message id {message_id} was already accepted with a different body",
                    message_id,
                    unit,
                )
            )
    return fresh, duplicates, conflicts


def _column(value, arrow_type, n):
    if isinstance(value, pa.ChunkedArray | pa.Array):
        return value
    if value is None:
        return pa.nulls(n, arrow_type)
    return pa.repeat(pa.scalar(value, type=arrow_type), n)


def _tables(fresh, *, now, epoch, source):
    ids, queues, bodies, shas, types, headers, conversations, senders = zip(*fresh, strict=True)
    n = len(ids)
    messages = pa.table(
        {
            "message_id": pa.array(ids, pa.string()),
            "version": _column(1, pa.int32(), n),
            "queue": pa.array(queues, pa.string()),
            "body": pa.array(bodies, pa.binary()),
            "body_sha256": pa.array(shas, pa.string()),
            "body_size": pa.array([len(b) for b in bodies], pa.int64()),
            "content_type": pa.array(types, pa.string()),
            "headers": pa.array(headers, pa.string()),
            "conversation_id": pa.array(conversations, pa.string()),
            "sender": pa.array(senders, pa.string()),
            "enqueued_at": _column(now, MESSAGE_SCHEMA.field("enqueued_at").type, n),
            "redrive_target": pa.nulls(n, pa.string()),
        },
        schema=MESSAGE_SCHEMA,
    )
    messages = messages.take(pc.sort_indices(messages["message_id"]))
    values = {
        "message_id": messages["message_id"],
        "epoch": epoch,
        "step": 0,
        "at": now,
        "from_state": None,
        "to_state": TBDL,
        "queue": messages["queue"],
        **NEW_MESSAGE_COLUMNS,
        "actor": source,
        "run_id": None,
        "reason": REASON_INGESTED,
    }
    # Columns ingest has no value for (exception_type, stack, queue_streak, ...) are null.
    events = pa.Table.from_arrays(
        [_column(values.get(f.name), f.type, n) for f in EVENT_SCHEMA], schema=EVENT_SCHEMA
    )
    return messages, events


def _batch_key(messages):
    digest = hashlib.sha256()
    for name in ("message_id", "body_sha256", "queue"):
        digest.update("\x00".join(messages[name].to_pylist()).encode())
        digest.update(b"\x01")
    return digest.hexdigest()


INGEST_EPOCH = 0


def _chunk_commit(fresh, *, source):
    """Write one chunk's messages and events and make them visible; the messages commit id."""
    now = datetime.now(UTC)
    # An ingest event is always its message's first (MessageKey makes the id new), so it sorts
    # before every other writer's: epoch 0. A real epoch could outrank the events of a delivery
    # run that started before this chunk committed and so deliver the message twice.
    epoch = INGEST_EPOCH
    messages, events = _tables(fresh, now=now, epoch=epoch, source=source)
    key = f"ingest:{_batch_key(messages)}"
    store = lake()
    written = []
    try:
        messages_path = store.write_arrow(messages, store.new_dir("messages", "ingest"))
        written.append(messages_path)
        events_path = store.write_arrow(events, store.new_dir("events", "ingest"))
        written.append(events_path)
        with transaction.atomic():
            commit = lake_commit_record(
                dataset="messages",
                path=messages_path,
                row_count=messages.num_rows,
                idempotency_key=key,
            )
            lake_commit_record(
                dataset="events",
                path=events_path,
                row_count=events.num_rows,
                idempotency_key=key,
                epoch=epoch,
            )
            _message_keys_insert(messages, commit_id=commit.id, now=now)
            queues = set(pc.unique(messages.column("queue")).to_pylist())
            # The queues page says where each queue's messages come from.
            queue_intake_record(queues=queues, source=source, at=now)
            messages_arrived.send(sender=MessageKey, queues=queues)
    except BaseException:
        # Nothing points at these directories: remove them rather than leave garbage.
        for relpath in written:
            shutil.rmtree(store.path(relpath), ignore_errors=True)
        raise
    return commit.id


def _message_keys_insert(messages, *, commit_id, now):
    """One executemany for the chunk: model instances would cost more than the insert itself."""
    meta = MessageKey._meta
    quote = connection.ops.quote_name
    columns = ("message_id", "body_sha256", "queue", "commit", "ingested_at")
    names = ", ".join(quote(meta.get_field(c).column) for c in columns)
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({names}) "  # noqa: S608 - names from the model
        f"VALUES ({', '.join(['%s'] * len(columns))})"
    )
    ingested_at = connection.ops.adapt_datetimefield_value(now)
    rows = zip(
        messages["message_id"].to_pylist(),
        messages["body_sha256"].to_pylist(),
        messages["queue"].to_pylist(),
        [commit_id] * messages.num_rows,
        [ingested_at] * messages.num_rows,
        strict=True,
    )
    with connection.cursor() as cursor:
        cursor.executemany(sql, list(rows))


# --- Files: the command line and the inbox -------------------------------------------------------


def ingest_file(*, path, source, errors_kept=ERRORS_KEPT):
    """Ingest one JSON Lines, JSON or Parquet file; errors name their line (or row)."""
    path = Path(path)
    try:
        unit, records = file_records(path)
    except FileUnreadable as exc:
        result = IngestResult(errors_kept=errors_kept)
        result.refuse(IngestError(None, str(exc), None, "file"))
        return result
    except OSError as exc:
        result = IngestResult(errors_kept=errors_kept)
        result.refuse(IngestError(None, f"could not be read: {exc.strerror or exc}", None, "file"))
        return result
    return messages_ingest(
        records=records, source=source, numbered_by=unit, errors_kept=errors_kept
    )


def ingest_candidates(directory, *, settle_seconds=None):
    """The files of a directory that ingest reads, by name: not dotfiles, not subdirectories,
    and with `settle_seconds`, only files nobody has written to for that long."""
    now = time.time()
    found = []
    for path in sorted(Path(directory).iterdir()):
        if path.name.startswith(".") or path.suffix.lower() not in SUFFIXES:
            continue
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        if not path.is_file():
            continue
        if settle_seconds is not None and now - stat.st_mtime <= settle_seconds:
            continue
        found.append(path)
    return found


PROCESSED = "processed"
FAILED = "failed"
ALREADY_TAKEN = "already taken"


@dataclass(frozen=True)
class InboxOutcome:
    """What one inbox scan did with one file: `status` is processed, failed (not a single record
    could be taken) or already taken (the same content was ingested before); `result` is None
    for a file already taken."""

    name: str
    status: str
    moved_to: Path
    result: IngestResult | None = None


def inbox_scan(*, inbox_dir=None, settle_seconds=2):
    """Ingest every settled file in the inbox folder and move it to processed/ or failed/.

    One scan at a time per inbox (a lock file); a second scan started meanwhile returns [] at
    once. A file is recorded (InboxFile, by content hash) before it is moved, so a scan that dies
    in between finds the record next time and only moves the file. Ingest itself is idempotent
    (MessageKey), so a scan that dies mid-file simply takes the file again.
    """
    inbox = Path(inbox_dir or settings.INBOX_DIR)
    inbox.mkdir(parents=True, exist_ok=True)
    with _inbox_lock(inbox) as held:
        if not held:
            log.info("inbox %s: another scan is running", inbox)
            return []
        return [
            _inbox_take(path, inbox)
            for path in ingest_candidates(inbox, settle_seconds=settle_seconds)
        ]


@contextmanager
def _inbox_lock(inbox):
    with open(inbox / ".scan.lock", "a") as lockfile:
        try:
            fcntl.flock(lockfile, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(lockfile, fcntl.LOCK_UN)


def _inbox_take(path, inbox):
    with open(path, "rb") as f:
        sha256 = hashlib.file_digest(f, "sha256").hexdigest()
    prior = inbox_file_get(sha256=sha256)
    if prior is not None and prior.accepted + prior.duplicates > 0:
        moved_to = _move_aside(path, inbox / PROCESSED)
        log.info("inbox: %s has the content of %s, taken before; moved aside", path.name, prior)
        return InboxOutcome(path.name, ALREADY_TAKEN, moved_to)

    # A file that failed before is taken again: its queue may exist by now.
    result = ingest_file(path=path, source=f"inbox:{path.name}")
    failed = result.accepted + result.duplicates == 0 and result.refused > 0
    InboxFile.objects.update_or_create(
        sha256=sha256,
        defaults={
            "name": path.name[:500],
            "accepted": result.accepted,
            "duplicates": result.duplicates,
            "rejected": result.refused,
            "errors": [e.as_dict() for e in result.errors],
        },
    )
    moved_to = _move_aside(path, inbox / (FAILED if failed else PROCESSED))
    if result.refused:
        _errors_write(moved_to, result)
    log.info(
        "inbox: %s: %d accepted, %d duplicates, %d refused",
        path.name,
        result.accepted,
        result.duplicates,
        result.refused,
    )
    return InboxOutcome(path.name, FAILED if failed else PROCESSED, moved_to, result)


def _move_aside(path, folder):
    folder.mkdir(exist_ok=True)
    target = folder / path.name
    if target.exists():
        stamp = timezone.now().strftime("%Y%m%dT%H%M%S%f")
        target = folder / f"{path.stem}.{stamp}{path.suffix}"
    path.rename(target)
    return target


def _errors_write(moved_to, result):
    lines = [str(e) for e in result.errors]
    if result.refused > len(result.errors):
        lines.append(f"... and {result.refused - len(result.errors)} more")
    moved_to.with_name(moved_to.name + ".errors.txt").write_text("\n".join(lines) + "\n")
