"""`{% load alert_words %}`: alert events said in words on the alert screens."""

from django import template
from django.utils.html import format_html_join

from console.alerts.events import LABELS

register = template.Library()


@register.filter
def alert_events(kinds):
    """Alert events by their labels, each with its code on hover, joined with commas: a webhook's
    events."""
    return format_html_join(
        ", ",
        '<span class="code-said" title="{}">{}</span>',
        ((kind, LABELS.get(kind, kind)) for kind in kinds),
    )
