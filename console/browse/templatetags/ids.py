"""Ids in tables, the same way on every screen (issue 45): `{% id_shown value %}` writes the id on
one line, cut with an ellipsis when it is longer than its room (never a letter per line), the whole
id on hover, and a button that copies it (static/js/copy_ids.js).

    {% load ids %}
    {% url 'message-detail' m.message_id as href %}
    {% id_shown m.message_id href=href link_class="message-link" %}

With `href`, the id is a link to its page. Ids come from outside (a producer names its messages):
the value is escaped, its control characters shown as markers (console/textshown.py), and the
copy button copies it exactly as it is."""

from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from console.textshown import controls_marked, shown

register = template.Library()

# Two sheets, one over the other: a copy. Drawn by the stylesheet (stroke), hidden from screen
# readers, which read the button's label. A constant: no value goes into it.
_COPY_ICON = mark_safe(
    '<svg class="copy-icon" viewBox="0 0 16 16" width="12" height="12" aria-hidden="true"'
    ' focusable="false"><rect x="5.5" y="5.5" width="8" height="8" rx="1"></rect>'
    '<path d="M3.5 10.5h-1v-8h8v1"></path></svg>'
)


@register.simple_tag
def id_shown(value, href=None, link_class=""):
    """The id `value` cut to its room with its whole text as the title, as a link to `href` if
    given (with the class `link_class`), and its copy button. Nothing for no value."""
    if value is None or value == "":
        return ""
    text = str(value)
    whole = controls_marked(text)
    if href:
        link_classes = f"id-text {link_class}".strip()
        cut = format_html(
            '<a class="{}" href="{}" title="{}">{}</a>', link_classes, href, whole, shown(text)
        )
    else:
        cut = format_html('<span class="id-text" title="{}">{}</span>', whole, shown(text))
    return format_html(
        '<span class="id">{}<button type="button" class="copy-id" data-copy="{}"'
        ' title="Copy the id" aria-label="Copy {}">{}</button></span>',
        cut,
        text,
        whole,
        _COPY_ICON,
    )
