"""`{{ value|when }}`: a moment, the same way on every screen.

The server writes it in UTC, named (`2026-03-01 12:00:05 UTC`), inside a <time> element that
carries the exact instant; console.js then shows it as people read time ("4 min ago", or the
date in the browser's own zone for older ones) with the full time and zone on hover. Without
script the UTC text stays, which is still one format with its zone said. Empty for no value, so
`|default:"—"` works after it. A built-in of the templates (settings.TEMPLATES), no {% load %}."""

from datetime import UTC, datetime

from django import template
from django.utils.html import format_html

register = template.Library()


@register.filter
def when(value):
    if not isinstance(value, datetime):
        return ""
    moment = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return format_html(
        '<time datetime="{}" data-when>{} UTC</time>',
        moment.isoformat(timespec="seconds").replace("+00:00", "Z"),
        moment.strftime("%Y-%m-%d %H:%M:%S"),
    )
