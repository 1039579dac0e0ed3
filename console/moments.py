"""Lengths of time and moments in words, one way for every screen and message: the templates'
`utc` and `when` filters (console.browse.templatetags.when), the runs page, the dashboard's
warning about stale counts. Pure: the clock is passed in."""

from datetime import UTC

# The relative time's units, as static/js/console.js has them: below each limit (seconds), that
# unit.
_STEPS = ((60, 1, "second"), (3600, 60, "minute"), (86400, 3600, "hour"), (None, 86400, "day"))


def span_text(delta):
    """A length of time as people read it: "45 s", "3 min 20 s", "2 h 5 min", "3 d 4 h"; "" for
    none."""
    if delta is None:
        return ""
    seconds = int(delta.total_seconds())
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    if seconds < 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} d {seconds % 86400 // 3600} h"


def relative(moment, *, now):
    """`moment` from `now` in words: "now", "4 minutes ago", "in 1 hour", "12 days ago"."""
    seconds = (moment - now).total_seconds()
    _, size, unit = next(step for step in _STEPS if step[0] is None or abs(seconds) < step[0])
    n = round(seconds / size)
    if n == 0:
        return "now"
    words = f"{abs(n)} {unit}{'' if abs(n) == 1 else 's'}"
    return f"in {words}" if n > 0 else f"{words} ago"


def moment_text(moment):
    """A moment as every screen writes it, in UTC and saying so: "2026-03-01 12:00:05 UTC". A
    naive datetime is taken as UTC."""
    at = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")
