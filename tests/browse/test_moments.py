"""Every moment on a screen in one format: UTC, named, in a <time> element that carries the
exact instant (the browser shows it as "4 min ago" and in its own zone, the full time on hover)."""

from datetime import datetime, timedelta, timezone

from django.template import Context, Template


def _render(value):
    return Template("{{ value|when|default:'—' }}").render(Context({"value": value}))


def test_a_moment_is_written_in_utc_with_its_zone_named():
    paris = timezone(timedelta(hours=1))

    html = _render(datetime(2026, 3, 1, 13, 0, 5, tzinfo=paris))

    assert html == '<time datetime="2026-03-01T12:00:05Z" data-when>2026-03-01 12:00:05 UTC</time>'


def test_no_moment_is_empty_so_a_default_shows():
    assert _render(None) == "—"
    assert _render("") == "—"
