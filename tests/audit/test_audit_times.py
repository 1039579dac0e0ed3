"""The audit table's "time (UTC)" column shows the absolute time, how long ago on hover; the
status lines above it, prose, say how long ago (console.browse.templatetags.when)."""

import re
from datetime import UTC, datetime

from django.urls import reverse

from tests.browse.conftest import login


def _utc_columns(html, table_id):
    table = html[html.index(f'id="{table_id}"') :]
    table = table[: table.index("</table>")]
    headers = re.findall(r"<th[^>]*>(.*?)</th>", table.split("</thead>")[0], re.S)
    return headers, table


def test_the_audit_tables_time_column_is_absolute(personas, record):
    record("login", actor="alice", at=datetime(2026, 3, 1, 12, 0, 5, tzinfo=UTC))

    html = login(personas["auditor"]).get(reverse("audit-list")).content.decode()

    headers, table = _utc_columns(html, "audit-table")
    assert "time (UTC)" in headers
    assert '<time datetime="2026-03-01T12:00:05Z" data-when="utc"' in table
    assert ">2026-03-01 12:00:05</time>" in table
    # Only prose says how long ago: a bare <time data-when> (no "utc") is not in the table.
    assert "data-when>" not in table
