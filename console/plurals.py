"""A count and its noun, agreed, for every sentence the console builds in Python (flash messages,
alerts, refusals, the runs page) and for the templates' `{% counted %}` and `{% these %}` tags
(console.browse.templatetags.words): "1 message", "1,200 messages", never "1 messages"."""

from django.utils.translation import ngettext


def counted(n, noun, plural=""):
    """`counted(3, "message")` -> "3 messages"; `counted(1, "entry", "entries")` -> "1 entry"."""
    # ngettext, so that a translation (when there is one) chooses the plural by its own rules.
    return ngettext("%(n)s " + noun, "%(n)s " + (plural or noun + "s"), n) % {"n": f"{n:,}"}


def these(n, noun, plural=""):
    """`these(1, "message")` -> "this message"; `these(4, "message")` -> "these 4 messages"."""
    if n == 1:
        return f"this {noun}"
    return f"these {counted(n, noun, plural)}"
