"""One rule for moments: a column headed "(UTC)" shows the absolute time ("2026-11-27 09:12:03")
with how long ago on hover; prose says how long ago, with the absolute time on hover. The list
pages follow it."""

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.conf import settings
from django.template import Context, Template

from console.moments import relative

NOW = datetime(2026, 11, 27, 9, 12, 3, tzinfo=UTC)


def _render(value):
    return Template("{{ value|utc|default:'—' }}").render(Context({"value": value}))


def test_a_utc_cell_shows_the_absolute_time_and_how_long_ago_on_hover(monkeypatch):
    monkeypatch.setattr("django.utils.timezone.now", lambda: NOW + timedelta(minutes=4))
    paris = timezone(timedelta(hours=1))

    html = _render(datetime(2026, 11, 27, 10, 12, 3, tzinfo=paris))

    assert html == (
        '<time datetime="2026-11-27T09:12:03Z" data-when="utc" title="4 minutes ago">'
        "2026-11-27 09:12:03</time>"
    )


def test_no_moment_is_empty_so_a_default_shows():
    assert _render(None) == "—"


@pytest.mark.parametrize(
    ("moment", "words"),
    [
        (NOW, "now"),
        (NOW - timedelta(seconds=1), "1 second ago"),
        (NOW - timedelta(seconds=59), "59 seconds ago"),
        (NOW - timedelta(minutes=1), "1 minute ago"),
        (NOW - timedelta(hours=5), "5 hours ago"),
        (NOW - timedelta(days=12), "12 days ago"),
        (NOW + timedelta(minutes=3), "in 3 minutes"),
    ],
)
def test_how_long_ago_is_said_as_the_browser_says_it(moment, words):
    assert relative(moment, now=NOW) == words


# The console's list pages, and the cells of theirs that are prose ("<when> · <title>", "set by
# <name>, <when>"), which may say how long ago.
LIST_TEMPLATES = {
    "audit/audit_list.html": (),
    "runs/run_list.html": (),
    "alerts/alert_list.html": (),
    "alerts/outbox.html": ("d.alert.created_at|when", "t.updated_at|when"),
    "lakequery/lake_query_list.html": (),
    "decisions/request_list.html": (),
    "decisions/notification_list.html": (),
    "accounts/_tokens_table.html": (),
    "accounts/lockouts.html": (),
}


@pytest.mark.parametrize("name", LIST_TEMPLATES)
def test_every_time_column_of_the_list_pages_is_headed_utc_and_absolute(name):
    source = (settings.BASE_DIR / "templates" / name).read_text()

    cells = re.findall(r"<td[^>]*>.*?</td>", source, re.S)
    relative_cells = [
        cell
        for cell in cells
        if "|when" in cell and not any(prose in cell for prose in LIST_TEMPLATES[name])
    ]
    assert relative_cells == []
    assert "|utc" in source and "(UTC)</th>" in source
