"""/audit/export.csv: every matching entry as CSV, formula-safe, and the export itself recorded."""

import csv
import io
import json

import pytest
from django.urls import reverse

from console.audit.exports import COLUMNS, csv_cell
from console.audit.models import AuditEntry
from console.audit.selectors import audit_verify
from tests.browse.conftest import login


def _csv(response):
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response.streaming
    text = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(text)))


def test_it_exports_every_matching_entry_oldest_first_with_its_hashes(personas, record):
    first = record(
        "request.created",
        actor="bob",
        target_type="request",
        target_id="7",
        details={"comment": "ship it", "count": 2},
    )
    record("login", actor="alice")
    second = record("request.approved", actor="carol", target_type="request", target_id="7")

    response = login(personas["auditor"]).get(reverse("audit-export") + "?action=request.")

    assert response["Content-Disposition"].startswith('attachment; filename="audit-')
    header, *rows = _csv(response)
    assert tuple(header) == COLUMNS
    assert [row[0] for row in rows] == [str(first.seq), str(second.seq)]
    assert rows[0] == [
        str(first.seq),
        first.at.isoformat(),
        "bob",
        "request.created",
        "request",
        "7",
        '{"comment": "ship it", "count": 2}',
        first.prev_hash,
        first.hash,
    ]
    assert json.loads(rows[0][6]) == first.details


def test_the_export_is_recorded_before_it_streams_with_its_filters(personas, record):
    record("login", actor="alice")
    client = login(personas["auditor"])

    response = client.get(reverse("audit-export") + "?actor_contains=ali&since=2026-03-01T00:00")

    entry = AuditEntry.objects.get(action="audit.exported")
    assert (entry.actor, entry.target_type) == ("auditor", "")
    assert entry.details == {
        "filters": {"actor_contains": "ali", "since": "2026-03-01T00:00:00+00:00"},
        "via": "page",
    }
    rows = _csv(response)[1:]
    assert [row[3] for row in rows] == ["login"]  # alice's; the filter leaves the rest out
    assert audit_verify().ok


def test_an_unfiltered_export_ends_with_its_own_record(personas, record):
    record("login", actor="alice")

    rows = _csv(login(personas["auditor"]).get(reverse("audit-export")))[1:]

    assert [row[3] for row in rows] == ["login", "login", "audit.exported"]
    # In the chain's order, each row links to the one before it.
    assert all(rows[n][7] == rows[n - 1][8] for n in range(1, len(rows)))


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ('=HYPERLINK("http://evil.example")', '\'=HYPERLINK("http://evil.example")'),
        ("+1+1", "'+1+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tcmd", "'\tcmd"),
        ("\rcmd", "'\rcmd"),
        ("alice", "alice"),
        ("a=b", "a=b"),
        ("", ""),
    ],
)
def test_a_cell_that_a_spreadsheet_would_run_is_quoted(value, cell):
    assert csv_cell(value) == cell


def test_hostile_values_reach_the_file_as_text(personas, record):
    record(
        "login.failed",
        actor="=cmd|' /C calc'!A0",
        target_type="user",
        target_id="@SUM(1+1)*cmd",
        details="-2+3",
    )

    rows = _csv(login(personas["auditor"]).get(reverse("audit-export") + "?action=login.failed"))

    assert rows[1][2:7] == [
        "'=cmd|' /C calc'!A0",
        "login.failed",
        "user",
        "'@SUM(1+1)*cmd",
        '"-2+3"',
    ]


def test_invalid_filters_are_refused_and_nothing_is_recorded(personas, record):
    record()

    response = login(personas["auditor"]).get(reverse("audit-export") + "?since=yesterday")

    assert response.status_code == 400
    assert b"invalid filters" in response.content
    assert not AuditEntry.objects.filter(action="audit.exported").exists()


def test_a_refused_export_is_not_recorded(personas, record):
    record()

    assert login(personas["operator"]).get(reverse("audit-export")).status_code == 403
    assert not AuditEntry.objects.filter(action="audit.exported").exists()
