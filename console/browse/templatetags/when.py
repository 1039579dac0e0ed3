"""Moments, the same way on every screen, by one rule:

- `{{ value|utc }}` in a column headed "(UTC)": the absolute time, `2026-11-27 09:12:03`, so that
  a table reads and sorts by eye and matches the audit export and the logs; how long ago it was
  on hover (title), written by the server and kept current by console.js.
- `{{ value|when }}` in prose ("Checkpoint #4 of 3 min ago"): the server writes the UTC time,
  named (`2026-03-01 12:00:05 UTC`); console.js shows it as people read time ("4 min ago", or the
  date in the browser's own zone for older ones) with the full time and zone on hover. Without
  script the UTC text stays, which is still one format with its zone said.

Both take a datetime or ISO text (a moment kept in JSON), write a <time> element that carries
the exact instant, and are empty for no value, so
`|default:"—"` works after them. Built-ins of the templates (settings.TEMPLATES), no {% load %}."""

from datetime import UTC, datetime

from django import template
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html

from console.moments import relative

register = template.Library()


def _in_utc(value):
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


def _iso(moment):
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _time_element(value, template, title=None):
    """A <time> element for a datetime, or for ISO text that is one (a moment kept in JSON: a
    request's frozen sample, a query's criteria), nothing for anything else: `template` places
    the UTC instant in ISO, then `title(moment)` when there is one, then the instant as people
    read it."""
    if isinstance(value, str):
        value = _parsed(value)
    if not isinstance(value, datetime):
        return ""
    moment = _in_utc(value)
    titles = [title(moment)] if title else []
    return format_html(template, _iso(moment), *titles, moment.strftime("%Y-%m-%d %H:%M:%S"))


def _parsed(text):
    try:
        return parse_datetime(text.strip())
    except ValueError:  # the shape of a moment, out of range ("2026-13-45T…")
        return None


@register.filter
def when(value):
    return _time_element(value, '<time datetime="{}" data-when>{} UTC</time>')


@register.filter
def utc(value):
    return _time_element(
        value,
        '<time datetime="{}" data-when="utc" title="{}">{}</time>',
        title=lambda moment: relative(moment, now=timezone.now()),
    )
