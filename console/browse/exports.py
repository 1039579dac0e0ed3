"""The quarantine list as a file, CSV or JSON Lines, for the message list's export links and the
API's export: every message the list's filters match, in the list's order, with the columns the
index API names, and each message's current body (base64) when asked for and allowed.

The file is streamed. The index is walked by keyset a page at a time, as the list pages it
(selectors.message_page), and the bodies of a page are read from the lake in batches of bounded
size, so a million rows take the memory a few thousand do, on SQLite and PostgreSQL alike. A page
read while messages move (a decision, a refresh) sees them where they are then, as the list's
next page would: the file is not a snapshot of one instant.

Reasons, senders, ids and bodies are attacker-controlled: every CSV cell goes through the audit
export's formula guard (a leading quote, which is not in base64's alphabet, so a body cell that
starts with "+" is its base64 once the quote is taken off), which also writes their control and
invisible characters as markers, `⟨U+202E⟩`, as the pages do. The JSON Lines file keeps the
stored text."""

import base64
import csv
import io
import json
import logging
from datetime import datetime

from django import forms
from django.core.exceptions import PermissionDenied
from django.http import StreamingHttpResponse
from django.utils import timezone

from console.audit.exports import csv_cell
from console.audit.services import audit_record
from console.browse import selectors
from console.browse.forms import MessageFilterForm
from console.lake.services import lake
from console.notes.models import MESSAGE
from console.notes.selectors import investigations_attach
from console.permissions import VIEW_BODY, VIEW_NOTES
from workers.lake.store import messages_rows_in

log = logging.getLogger(__name__)

CSV, JSONL = "csv", "jsonl"
# format -> (content type, file name extension)
FORMATS = {
    CSV: ("text/csv; charset=utf-8", "csv"),
    JSONL: ("application/x-ndjson", "jsonl"),
}
BODIES_REFUSED = "exporting bodies needs the permission to read them"

# The index's columns as the index API (apis.MessageIndexApi) names them, in its order: a file
# and a page of the API describe a message alike. (name, MessageIndex attribute)
COLUMNS = (
    ("id", "message_id"),
    ("queue", "queue"),
    ("original_queue", "original_queue"),
    ("state", "state"),
    ("delivery_count", "delivery_count"),
    ("candidate", "candidate"),
    ("next_attempt_at", "next_attempt_at"),
    ("first_failure_at", "first_failure_at"),
    ("last_failure_at", "last_failure_at"),
    ("reason", "reason"),
    ("exception_type", "exception_type"),
    ("group", "group_id"),
    ("sender", "sender"),
    ("conversation_id", "conversation_id"),
    ("body_size", "body_size"),
    ("content_type", "content_type"),
    ("enqueued_at", "enqueued_at"),
    ("updated_at", "updated_at"),
)
# Who investigates a message (its own owner, else its group's): null without VIEW_NOTES.
OWNER_COLUMN = "owner"
BODY_COLUMN = "body_base64"

# Index rows read a query at a time; bodies read a batch at a time, a batch holding at most this
# many rows and, by the index's body sizes, about this many bytes (a larger body alone).
PAGE_ROWS = 2000
BODY_BATCH_ROWS = 2000
BODY_BATCH_BYTES = 16 * 2**20
# What the response is written in: a chunk of about this many bytes, not a chunk a line.
CHUNK_BYTES = 64 * 1024


class MessageExportForm(MessageFilterForm):
    """The message list's filters and sort, the file's format, and whether it holds the bodies.
    Not the list's paging: a file holds every matching message."""

    format = forms.ChoiceField(choices=[(CSV, "CSV"), (JSONL, "JSON Lines")])
    bodies = forms.ChoiceField(
        required=False, choices=[("0", "no"), ("1", "yes")], label="with the bodies (base64)"
    )

    def __init__(self, data=None, **kwargs):
        super().__init__(data, **kwargs)
        for paging in ("after", "before", "size", "at", "page_size"):
            self.fields.pop(paging, None)

    @property
    def wants_bodies(self):
        return self.cleaned_data.get("bodies") == "1"

    def export(self):
        """message_export_response's arguments (all but who and via)."""
        return {
            "filters": self.filters(),
            "sort": self.cleaned_data["sort"],
            "file_format": self.cleaned_data["format"],
            "bodies": self.wants_bodies,
        }


def message_export_response(*, actor, filters, sort, file_format, bodies, via):
    """Record the export (who, which filters and sort, which format, with or without bodies,
    `via` "page" or "api"), then stream the file. PermissionDenied for bodies `actor` may not
    read (the views check first, to answer in their own way)."""
    if bodies and not actor.has_perm(VIEW_BODY):
        raise PermissionDenied(BODIES_REFUSED)
    audit_record(
        actor=actor,
        action="messages.exported",
        details={
            "filters": {name: _as_param(value) for name, value in filters.items()},
            "sort": sort,
            "format": file_format,
            "bodies": bodies,
            "via": via,
        },
    )
    owners = actor.has_perm(VIEW_NOTES)
    rows = _rows(filters=filters, sort=sort, bodies=bodies, owners=owners)
    lines = (
        _csv_lines(rows, bodies=bodies) if file_format == CSV else _jsonl_lines(rows, bodies=bodies)
    )
    content_type, extension = FORMATS[file_format]
    response = StreamingHttpResponse(_chunks(lines), content_type=content_type)
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="messages-{stamp}.{extension}"'
    response["Cache-Control"] = "no-store"
    return response


def _as_param(value):
    return value.isoformat() if hasattr(value, "isoformat") else value


def _rows(*, filters, sort, bodies, owners):
    """(index row, body) of every matching message in the list's order; the body is bytes, or
    None when not asked for or no longer in the lake (purged, compacted away). With `owners`,
    each row's investigation is attached, as the list attaches it to a page."""
    after = None
    while True:
        page = selectors.message_page(filters=filters, sort=sort, after=after, size=PAGE_ROWS)
        if owners:
            investigations_attach(page.rows, kind=MESSAGE)
        if bodies:
            for batch in _body_batches(page.rows):
                found = _bodies_read(batch)
                for row in batch:
                    yield row, found.get(row.message_id)
        else:
            for row in page.rows:
                yield row, None
        if page.next_cursor is None:
            return
        after = page.next_cursor


def _body_batches(rows):
    batch, size = [], 0
    for row in rows:
        if batch and (len(batch) >= BODY_BATCH_ROWS or size + row.body_size > BODY_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(row)
        size += max(row.body_size, 0)
    if batch:
        yield batch


def _bodies_read(rows):
    """{message_id: body} of the rows' current bodies, read as the detail page reads one (its
    index row's lake directory and body version; the newest version there if the index lags
    behind an edit), each directory's files once for the whole batch."""
    wanted = {}  # directory -> {message_id: body version}
    for row in rows:
        wanted.setdefault(row.body_path, {})[row.message_id] = row.body_version
    store = lake()
    found = {}
    for path, versions in wanted.items():
        try:
            tables = messages_rows_in(
                [store.path(path)], sorted(versions), columns=["message_id", "version", "body"]
            )
        except FileNotFoundError:
            log.warning("export: the body directory %s is not in the lake", path)
            continue
        chosen = {}  # message_id -> (the index's version, version)
        for _, table in tables:
            columns = (table.column(name).to_pylist() for name in ("message_id", "version", "body"))
            for message_id, version, body in zip(*columns, strict=True):
                rank = (version == versions[message_id], version)
                if message_id not in chosen or rank > chosen[message_id]:
                    chosen[message_id] = rank
                    found[message_id] = body or b""
    return found


def _value(value):
    """A cell's value as JSON has it (and the index API gives it)."""
    if isinstance(value, datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    return value


def _record(row):
    record = {name: _value(getattr(row, attribute)) for name, attribute in COLUMNS}
    investigation = getattr(row, "investigation", None)
    record[OWNER_COLUMN] = investigation.owner.get_username() if investigation else None
    return record


def _jsonl_lines(rows, *, bodies):
    for row, body in rows:
        record = _record(row)
        if bodies:
            record[BODY_COLUMN] = None if body is None else base64.b64encode(body).decode("ascii")
        yield json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def _csv_text(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return csv_cell(value)


def _csv_lines(rows, *, bodies):
    """CSV text, a few rows at a time (csv.writer writes into a buffer that is handed on)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(
        [name for name, _ in COLUMNS] + [OWNER_COLUMN] + ([BODY_COLUMN] if bodies else [])
    )
    for row, body in rows:
        cells = [_csv_text(value) for value in _record(row).values()]
        if bodies:
            cells.append(
                csv_cell(base64.b64encode(body).decode("ascii")) if body is not None else ""
            )
        writer.writerow(cells)
        if buffer.tell() >= CHUNK_BYTES:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def _chunks(lines):
    """The text as UTF-8 chunks of about CHUNK_BYTES. A character no encoder takes (a lone
    surrogate) becomes "?" rather than ending the file half-way."""
    parts, size = [], 0
    for line in lines:
        parts.append(line)
        size += len(line)
        if size >= CHUNK_BYTES:
            yield "".join(parts).encode("utf-8", "replace")
            parts, size = [], 0
    if parts:
        yield "".join(parts).encode("utf-8", "replace")
