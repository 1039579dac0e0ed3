"""`{% load codes %}`: a code a person reads (a state, a setting, an option, a handler's path, an
audit action) with what it means on hover, from the one list of them, console.glossary.CODES.

- `{{ m.state|code }}`: the code itself, where it is short and the product's own word (a state
  pill: NDLV), with its title and sentence on hover: `<abbr title="quarantined (NDLV): ...">`.
- `{{ e.action|said }}`: the code's title instead ("request approved"), with the code on hover,
  for codes people need not learn (audit actions, option names, handlers' paths).
- `{{ state|code_hint }}`: the hover text alone, for an element that already holds the code
  (`<span class="pill" title="{{ state|code_hint }}">`); `{{ run.outcomes|codes_hint }}` for one
  that holds several.

An unknown value is shown as it is, escaped, with no title: data is never taken for markup."""

from django import template
from django.utils.html import format_html

from console.glossary import CODES
from console.glossary import code_hint as glossary_code_hint

register = template.Library()


@register.filter
def code_hint(value):
    return glossary_code_hint(str(value)) if value is not None else ""


@register.filter
def codes_hint(values):
    """The hover of a few codes said together ("DLVD 9, NDLV 1"): each one's title, in order:
    "DLVD: delivered; NDLV: quarantined"."""
    return "; ".join(f"{value}: {CODES[value][0]}" for value in sorted(values) if value in CODES)


@register.filter
def code(value):
    if value is None:
        return ""
    hint = glossary_code_hint(str(value))
    if not hint:
        return value
    return format_html('<abbr class="code" title="{}">{}</abbr>', hint, value)


@register.filter
def said(value):
    if value is None:
        return ""
    text = str(value)
    if text not in CODES:
        return value
    return format_html(
        '<span class="code-said" title="{}">{}</span>', glossary_code_hint(text), CODES[text][0]
    )
