"""`{% load words %}`: a message's numbers, flags and moments in words (console.browse.
message_words). Its own module so the built-in `when` filter stays the one way list columns show
a moment."""

from datetime import UTC, datetime

from django import template
from django.utils.html import format_html

from console import plurals
from console.browse import message_words
from console.queues.policy_words import duration, queue_action_words

register = template.Library()


@register.filter
def attempt_words(event):
    """An event's attempt number and delivery count, said: `{{ e|attempt_words }}`."""
    return message_words.attempt_words(event.get("attempt"), event.get("delivery_count"))


@register.filter
def suspected(message):
    """A message (an index row or a MessageView) whose candidate flag still means something."""
    return message_words.suspected(
        state=getattr(message, "state", ""),
        candidate=getattr(message, "candidate", False),
        reason=getattr(message, "reason", ""),
    )


@register.filter
def queue_action(action):
    """An audit action on a queue, said: "queue.enabled" -> "enabled"."""
    return queue_action_words(action)


@register.simple_tag
def these(n, noun, plural=""):
    """`{% these r.count "message" %}`: "this message", "these 1,200 messages"; never "these
    1"."""
    return plurals.these(n, noun, plural)


@register.simple_tag
def counted(n, noun, plural=""):
    """`{% counted n "queue" %}`: "1 queue", "12 queues": a count and its noun, agreed."""
    return plurals.counted(n, noun, plural)


@register.simple_tag
def candidate_title():
    return message_words.CANDIDATE_TITLE


@register.filter
def moment(value, now=None):
    """A moment for a sentence: the UTC time, always written out, and beside it how long ago
    ("2026-11-27 09:12:03 UTC (25 s ago)"). The second part is a `when` element, which
    console.js keeps current (with the browser's own zone on hover)."""
    if not isinstance(value, datetime):
        return ""
    at = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    seconds = int(((now or datetime.now(UTC)) - at).total_seconds())
    ago = f"{duration(seconds)} ago" if seconds > 0 else "just now"
    if seconds < 0:
        ago = f"in {duration(-seconds)}"
    utc = at.strftime("%Y-%m-%d %H:%M:%S UTC")
    iso = at.isoformat(timespec="seconds").replace("+00:00", "Z")
    return format_html(
        '<time datetime="{}">{}</time> (<time datetime="{}" data-when data-utc="{}">{}</time>)',
        iso,
        utc,
        iso,
        utc,
        ago,
    )
