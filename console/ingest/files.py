"""Readers for the files ingest takes: JSON Lines, JSON and Parquet.

Each reader yields `(position, record)` pairs, where position is the 1-based line (JSON Lines), row
(Parquet) or record (a JSON document) a person finds the record at, and record is a dict or an
`Unreadable` saying why that line could not be read. One bad line never stops a file: the reader
reports it and goes on. A whole file that cannot be opened at all raises `FileUnreadable`.

JSON Lines and Parquet files are streamed (a line, or a record batch, at a time) so a file of a
million messages is never held in memory. A `.json` file holding one JSON document (a list of
records, `{"messages": [...]}` or a single record) is read whole; a `.json` file holding one record
per line is read as JSON Lines.
"""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from django.conf import settings

SUFFIXES = (".jsonl", ".json", ".parquet")

# The fields a record may carry (the API and every file format share them).
FIELDS = frozenset(
    {"id", "queue", "body", "body_encoding", "content_type", "headers", "conversation_id", "sender"}
)

PARQUET_BATCH_ROWS = 10_000


class FileUnreadable(Exception):
    """Not a single record of the file could be read (wrong format, corrupt file)."""


class Unreadable:
    """Stands in for a line that could not be read; `reason` says why."""

    __slots__ = ("reason",)

    def __init__(self, reason):
        self.reason = reason

    def __repr__(self):
        return f"Unreadable({self.reason!r})"


def record_max_bytes():
    """The longest line (or request) that can hold one message: a body at the limit, base64
    encoded, plus room for its id, headers and the rest."""
    return settings.MAX_BODY_BYTES * 4 // 3 + 4 + 1024 * 1024


def file_records(path):
    """(unit, iterator of (position, record)) for one file, chosen by its suffix.

    Raises FileUnreadable when nothing in the file can be read."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return "line", _jsonl_records(path)
    if suffix == ".json":
        return _json_records(path)
    if suffix == ".parquet":
        return "row", _parquet_records(path)
    raise FileUnreadable(f"{path.name}: not a file ingest reads (use one of {', '.join(SUFFIXES)})")


def _jsonl_records(path):
    max_line = record_max_bytes()
    with open(path, "rb") as f:
        number = 0
        while raw := f.readline(max_line + 1):
            number += 1
            if len(raw) > max_line and not raw.endswith(b"\n"):
                # Skip the rest of an overlong line without holding it.
                while raw and not raw.endswith(b"\n"):
                    raw = f.readline(1024 * 1024)
                yield number, Unreadable(f"longer than {max_line} bytes")
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                yield number, Unreadable("not valid UTF-8")
                continue
            if number == 1 and text.startswith("\ufeff"):
                text = text[1:]
            try:
                record = json.loads(text)
            except ValueError as exc:
                if text.strip():
                    yield number, Unreadable(f"not valid JSON: {exc}")
                # A blank line is not a record and not an error.
                continue
            yield number, record


def _json_records(path):
    raw = path.read_bytes()
    try:
        document = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        # Perhaps one record per line, one of them broken: the JSON Lines reader says which.
        return "line", _jsonl_records(path)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            return "line", _jsonl_records(path)
        raise FileUnreadable(f"not valid JSON: {exc}") from None
    if isinstance(document, dict) and isinstance(document.get("messages"), list):
        document = document["messages"]
    if isinstance(document, dict):
        document = [document]
    if not isinstance(document, list):
        raise FileUnreadable(
            'expected a message object, a list of them, or {"messages": [...]}, '
            f"not a JSON {type(document).__name__}"
        )
    return "record", enumerate(document, start=1)


def _parquet_records(path):
    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise FileUnreadable(f"not a readable Parquet file: {exc}") from None
    unknown = sorted(set(parquet.schema_arrow.names) - FIELDS)
    if unknown:
        parquet.close()
        # One error for the file, not the same one for every row.
        raise FileUnreadable(
            f"column(s) {', '.join(unknown)} are not message fields "
            f"(allowed: {', '.join(sorted(FIELDS))})"
        )
    return _parquet_rows(parquet)


def _parquet_rows(parquet):
    with parquet:
        batches = parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS)
        row = 0
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            except (pa.ArrowException, OSError) as exc:
                yield row + 1, Unreadable(f"the file could not be read from this row on: {exc}")
                return
            for record in batch.to_pylist():
                row += 1
                headers = record.get("headers")
                if headers is not None and not isinstance(headers, dict):
                    record["headers"] = _parquet_headers(headers)
                yield row, record


def _parquet_headers(value):
    """Headers as a map column (pairs), or as JSON text; anything else is left for the record
    check to refuse."""
    if isinstance(value, list):
        try:
            return dict(value)
        except (TypeError, ValueError):
            return value
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value
