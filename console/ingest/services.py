"""Ingest: messages come in through the API, the inbox folder and `manage.py ingest`, and every
one of those goes through `messages_ingest`.

A record is checked (SEMANTICS: id, queue, body, content type, headers, conversation id, sender),
then deduplicated against MessageKey: the same id with the same body is a duplicate and a no-op, the
same id with another body is refused. Accepted messages are appended to the lake's `messages`
dataset with an initial TBDL event each in `events` (R1).

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

import base64
import binascii
import fcntl
import hashlib
import json
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

from console.ingest.files import FIELDS, SUFFIXES, FileUnreadable, Unreadable, file_records
from console.ingest.models import InboxFile, MessageKey
from console.ingest.selectors import inbox_file_get, message_keys_body_hashes, queue_names
from console.ingest.signals import messages_arrived
from console.lake.services import lake, lake_commit_record
from workers.engine.own_headers import PRODUCT_PREFIXES, headers_stored, is_product_name
from workers.engine.states import TBDL
from workers.lake.schema import EVENT_SCHEMA, MESSAGE_SCHEMA

log = logging.getLogger(__name__)

CHUNK_RECORDS = 50_000
CHUNK_BYTES = 128 * 1024 * 1024
# A result keeps this many errors (and counts them all); a file of a million bad lines would
# otherwise hold a million error objects.
ERRORS_KEPT = 1000
ID_MAX_LENGTH = 200
# A broker source's records carry, beside a message's fields, what the source wrote about it.
SOURCE_FIELDS = FIELDS | {"own_headers"}
REASON_INGESTED = "ingested"
TEXT_TYPE = "text/plain"
BINARY_TYPE = "application/octet-stream"


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


class _Refused(Exception):
    def __init__(self, message, message_id=None):
        super().__init__(message)
        self.message = message
        self.message_id = message_id


# --- Checking one record ------------------------------------------------------------------------


def _text_ok(value):
    """True if the string can be stored (a JSON string may hold a lone surrogate; UTF-8 cannot)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _base64_decode(text, message_id):
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        pass
    try:
        # Base64 wrapped over lines (MIME style) is still base64.
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise _Refused("body is not valid base64", message_id) from None


def _optional_text(record, name, message_id):
    value = record.get(name)
    if value is None or value == "":
        # An empty conversation id would put every such message in one conversation (R13).
        return None
    if type(value) is not str or not _text_ok(value):
        raise _Refused(f"{name} must be a string", message_id)
    return value


def _id_check(message_id):
    """The record's id, or _Refused saying what is wrong with it (not only that it is wrong)."""
    expected = f"a string of 1 to {ID_MAX_LENGTH} printable characters"
    if message_id is None:
        raise _Refused(f"id is required: {expected}")
    if type(message_id) is not str:
        raise _Refused(f"id must be {expected}, not a JSON {_json_type(message_id)}")
    if not message_id:
        raise _Refused(f"id is empty: it must be {expected}")
    if len(message_id) > ID_MAX_LENGTH:
        raise _Refused(
            f"id is at most {ID_MAX_LENGTH:,} characters; this one has {len(message_id):,}"
        )
    if not message_id.isprintable():
        at, char = next((i, c) for i, c in enumerate(message_id) if not c.isprintable())
        raise _Refused(
            f"id must be printable text; character {at + 1} is U+{ord(char):04X}, which is not"
        )
    return message_id


def _json_type(value):
    if type(value) is bool:
        return "boolean"
    if type(value) in (int, float):
        return "number"
    return {dict: "object", list: "array", bytes: "binary value"}.get(type(value), "value")


def _own_headers(own, message_id):
    """A broker source's records of a message (workers.engine.own_headers), checked: only names
    of the product's namespaces, with text values."""
    if type(own) is not dict or not all(
        type(k) is str and is_product_name(k) and type(v) is str for k, v in own.items()
    ):
        raise _Refused(
            "a source's own headers must be text, named in the product's namespaces "
            f"({', '.join(PRODUCT_PREFIXES)})",
            message_id,
        )
    return own


# An error quotes at most this much of a header's name.
HEADER_NAME_QUOTED = 60


def header_bytes(text):
    """The size of a header name or value as the header limits count it: its UTF-8 bytes (a lone
    surrogate, which a JSON string may hold, as the three bytes it would take)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _header_named(name):
    # A name is the producer's text: quoted (repr escapes controls) and cut, for an error line.
    return repr(name[:HEADER_NAME_QUOTED]) + ("..." if len(name) > HEADER_NAME_QUOTED else "")


def _headers_limit_check(headers, message_id):
    """_Refused when the headers a message would be stored with (a dict of text) are over a
    limit: MAX_HEADER_COUNT headers, MAX_HEADER_NAME_BYTES a name, MAX_HEADER_VALUE_BYTES a
    value, MAX_HEADERS_TOTAL_BYTES for names and values together (console/settings.py says why
    those defaults). The error names the limit and its setting, as the body's does."""
    count, most = len(headers), settings.MAX_HEADER_COUNT
    if count > most:
        # Before looking at a single header: a flood costs one len().
        raise _Refused(
            f"{count:,} headers, over the limit of {most:,} headers (MAX_HEADER_COUNT)",
            message_id,
        )
    name_most = settings.MAX_HEADER_NAME_BYTES
    value_most = settings.MAX_HEADER_VALUE_BYTES
    total = 0
    for name, value in headers.items():
        # header_bytes, inlined for ASCII: every message of every route comes through here.
        size = len(name) if name.isascii() else header_bytes(name)
        value_size = len(value) if value.isascii() else header_bytes(value)
        if size > name_most:
            raise _Refused(
                f"header name {_header_named(name)} is {size:,} bytes, over the limit of "
                f"{name_most:,} bytes (MAX_HEADER_NAME_BYTES)",
                message_id,
            )
        if value_size > value_most:
            raise _Refused(
                f"header {_header_named(name)} is {value_size:,} bytes, over the limit of "
                f"{value_most:,} bytes (MAX_HEADER_VALUE_BYTES)",
                message_id,
            )
        total += size + value_size
    if total > settings.MAX_HEADERS_TOTAL_BYTES:
        raise _Refused(
            f"headers are {total:,} bytes (names and values), over the limit of "
            f"{settings.MAX_HEADERS_TOTAL_BYTES:,} bytes (MAX_HEADERS_TOTAL_BYTES)",
            message_id,
        )


def _record_check(record, queues, limit, own_allowed=False):
    """The row to write for one record, or _Refused saying why not. `own_allowed`: the record
    comes from a broker source of the product, whose records of the message are in its
    `own_headers` (console.ingest.consumers); from any other route that field is unknown."""
    if type(record) is not dict:
        raise _Refused("a message must be a JSON object")
    message_id = _id_check(record.get("id"))
    fields = SOURCE_FIELDS if own_allowed else FIELDS
    if not fields.issuperset(record):
        extra = record.keys() - fields
        raise _Refused(
            f"unknown field(s) {', '.join(sorted(map(repr, extra)))}; "
            f"a message has {', '.join(sorted(FIELDS))}",
            message_id,
        )

    queue = record.get("queue")
    if type(queue) is not str:
        raise _Refused("queue is required: the name of an existing queue", message_id)
    if queue not in queues:
        raise _Refused(f"unknown queue {queue!r}: no queue of that name exists", message_id)

    body = record.get("body")
    encoding = record.get("body_encoding")
    if encoding not in (None, "text", "base64"):
        raise _Refused('body_encoding must be "text" or "base64"', message_id)
    if type(body) is str:
        if encoding == "base64":
            data = _base64_decode(body, message_id)
            default_type = BINARY_TYPE
        else:
            try:
                data = body.encode("utf-8")
            except UnicodeEncodeError:
                raise _Refused("body is not valid Unicode text", message_id) from None
            default_type = TEXT_TYPE
    elif type(body) is bytes:
        # A Parquet binary column: the bytes as they are (or base64 text, if said so).
        data = _base64_decode(body, message_id) if encoding == "base64" else body
        default_type = BINARY_TYPE
    elif body is None:
        raise _Refused('body is required (send "" for an empty body)', message_id)
    else:
        raise _Refused("body must be a string", message_id)
    if len(data) > limit:
        raise _Refused(
            f"body is {len(data)} bytes, over the limit of {limit} bytes (MAX_BODY_BYTES)",
            message_id,
        )

    content_type = record.get("content_type")
    if content_type is None:
        content_type = default_type
    elif type(content_type) is not str or not content_type or not content_type.isprintable():
        raise _Refused("content_type must be a non-empty string", message_id)

    headers = record.get("headers")
    if headers is None:
        headers = {}
    elif type(headers) is not dict or not all(
        type(k) is str and type(v) is str for k, v in headers.items()
    ):
        raise _Refused("headers must be an object of string to string", message_id)
    # R18: a name of the product's namespaces is the product's to write, whatever the route: a
    # producer's is kept under a foreign name, then a broker source's own records are added.
    own = record.get("own_headers") if own_allowed else None
    headers = headers_stored(headers, _own_headers(own, message_id) if own else None)
    _headers_limit_check(headers, message_id)
    # Default arguments: json reuses its one C encoder (sort_keys would build a new one).
    headers_text = json.dumps(headers) if headers else "{}"

    return (
        message_id,
        queue,
        data,
        hashlib.sha256(data).hexdigest(),
        content_type,
        headers_text,
        _optional_text(record, "conversation_id", message_id),
        _optional_text(record, "sender", message_id),
    )


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
            row = _record_check(record, queues, limit, from_source)
        except _Refused as exc:
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
        "attempt": 0,
        "delivery_count": 0,
        "candidate": False,
        "batch_limit": 0,
        "next_attempt_at": None,
        "body_version": 1,
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
            messages_arrived.send(
                sender=MessageKey, queues=set(pc.unique(messages.column("queue")).to_pylist())
            )
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
