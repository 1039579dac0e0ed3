"""The audit trail as CSV, for the screen's and the API's export.

Spreadsheets run a cell that starts with a formula character. Actors, targets and details carry
text that others typed (comments, reasons, user names tried at login), so every such cell is
prefixed with a quote, which shows as text and runs nothing. Their control and invisible
characters (a right-to-left override) are written as the pages show them, `⟨U+202E⟩`
(console/textshown.py), so a spreadsheet shows the text in the order it was stored."""

import csv
import json

from django.http import StreamingHttpResponse
from django.utils import timezone

from console.audit.selectors import audit_export_rows
from console.audit.services import audit_record
from console.textshown import controls_marked

COLUMNS = (
    "seq",
    "at",
    "actor",
    "action",
    "target_type",
    "target_id",
    "details",
    "prev_hash",
    "hash",
)
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    text = controls_marked(str(value))
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _row(entry):
    return [
        csv_cell(value)
        for value in (
            entry.seq,
            entry.at.isoformat(),
            entry.actor,
            entry.action,
            entry.target_type,
            entry.target_id,
            json.dumps(entry.details, sort_keys=True, ensure_ascii=False),
            entry.prev_hash,
            entry.hash,
        )
    ]


class _Echo:
    """A file-like object whose write() hands the line back, for csv.writer to stream through."""

    def write(self, value):
        return value


def _lines(entries):
    writer = csv.writer(_Echo())
    yield writer.writerow(COLUMNS)
    for entry in entries:
        yield writer.writerow(_row(entry))


def _as_param(value):
    return value.isoformat() if hasattr(value, "isoformat") else value


def audit_csv_response(*, actor, filters, via):
    """Record the export (who, which filters), then stream every matching entry up to and
    including that record: the file is a snapshot, whatever is appended while it streams."""
    entry = audit_record(
        actor=actor,
        action="audit.exported",
        details={"filters": {k: _as_param(v) for k, v in filters.items()}, "via": via},
    )
    response = StreamingHttpResponse(
        _lines(audit_export_rows(filters=filters, up_to=entry.seq)),
        content_type="text/csv; charset=utf-8",
    )
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.csv"'
    response["Cache-Control"] = "no-store"
    return response
