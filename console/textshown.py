"""Text that people or messages wrote, shown as it is stored: `{{ value|shown }}`.

A comment, reason, note, header or body may hold characters that change how the text around them
is drawn without being seen themselves: bidi controls (a right-to-left override makes "txt.exe"
read "exe.txt"), zero-width and other invisible format characters, C0/C1 control characters.
An approver must read what was stored, in the order it was stored, so each of them is shown as
a visible marker instead, `⟨U+202E⟩`, and obeys nothing. The API and the JSON exports keep the
stored text; the CSV exports mark it too (console.audit.exports.csv_cell).

What is marked (`_MARKED`):
- C0 and C1 control characters and DEL, but tab, newline and carriage return, which are layout;
- every format character (Unicode category Cf): bidi embeddings, overrides, isolates and marks,
  zero-width space and joiners, word joiner, invisible operators, the BOM, soft hyphen, tag
  characters (which can spell out invisible ASCII), Arabic and other prepended number signs;
- the other characters Unicode draws as nothing by default (Default_Ignorable_Code_Point): the
  combining grapheme joiner, the Hangul and Khmer fillers, variation selectors, the unassigned
  rest of U+E0000-U+E0FFF; and lone surrogates, which would not even encode.

Two exceptions keep ordinary text as people write it:
- ZERO WIDTH JOINER between two emoji (a family, a profession with a skin tone, a rainbow flag)
  is kept: there it only picks one picture for the sequence, and a marker in the middle of every
  such emoji would be noise. Anywhere else (between letters, where it can make two look-alike
  words differ) it is marked.
- A variation selector straight after a visible character is kept: it only picks a glyph of that
  character (the emoji or text form of ❤, an ideograph's variant). One after another variation
  selector, after a space or control, or at the start is marked: runs of them are how data is
  hidden inside an innocent-looking emoji.
Subdivision flags (England, Scotland) are a black flag and tag characters: they show with markers.

This module is one of the templates' built-ins (settings.TEMPLATES): no {% load %}."""

import re
import unicodedata
from decimal import Decimal

from django import template
from django.utils.html import escape as escape_html
from django.utils.html import format_html
from django.utils.safestring import SafeData, mark_safe

register = template.Library()

ZWJ = "\u200d"

# The code points marked, as a regular expression class. The format characters (Cf) are listed
# by range because `re` has no \p{Cf}; tests/test_textshown.py checks that the list still holds
# every Cf of the running Python's Unicode database, so a newer Unicode cannot slip one past.
_MARKED = re.compile(
    "["
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # C0 but tab, newline, CR; DEL; C1
    "\u00ad"  # soft hyphen
    "\u034f"  # combining grapheme joiner
    "\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"  # Arabic letter mark, number signs
    "\u115f\u1160\u17b4\u17b5"  # Hangul choseong/jungseong fillers, Khmer inherent vowels
    "\u180b-\u180f"  # Mongolian variation selectors and vowel separator
    "\u200b-\u200f"  # zero width space, non-joiner, joiner; LRM, RLM
    "\u202a-\u202e"  # LRE, RLE, PDF, LRO, RLO
    "\u2060-\u206f"  # word joiner, invisible operators; LRI, RLI, FSI, PDI; deprecated formats
    "\u3164"  # Hangul filler
    "\ud800-\udfff"  # lone surrogates
    "\ufe00-\ufe0f"  # variation selectors
    "\ufeff"  # zero width no-break space (BOM)
    "\uffa0"  # halfwidth Hangul filler
    "\ufff0-\ufffb"  # unassigned ignorables; interlinear annotation
    "\U000110bd\U000110cd"  # Kaithi number signs
    "\U00013430-\U0001343f"  # Egyptian hieroglyph format controls
    "\U0001bca0-\U0001bca3"  # shorthand format controls
    "\U0001d173-\U0001d17a"  # musical symbol format controls
    "\U000e0000-\U000e0fff"  # tags, variation selectors supplement, unassigned ignorables
    "]"
)


def _is_variation_selector(ch):
    code = ord(ch)
    return (
        0xFE00 <= code <= 0xFE0F
        or 0xE0100 <= code <= 0xE01EF
        or 0x180B <= code <= 0x180D
        or code == 0x180F
    )


def _is_emoji_modifier(ch):
    return 0x1F3FB <= ord(ch) <= 0x1F3FF  # skin tones


def _joins_emoji(text, at):
    """Whether the ZWJ at `at` stands between two emoji (symbols, category So), the one before
    it perhaps followed by its variation selector or skin tone."""
    before = at - 1
    while before >= 0 and (
        _is_variation_selector(text[before]) or _is_emoji_modifier(text[before])
    ):
        before -= 1
    after = at + 1
    return (
        before >= 0
        and after < len(text)
        and unicodedata.category(text[before]) == "So"
        and unicodedata.category(text[after]) == "So"
    )


def _kept(text, at):
    ch = text[at]
    if ch == ZWJ:
        return _joins_emoji(text, at)
    if _is_variation_selector(ch):
        if at == 0:
            return False
        before = text[at - 1]
        return not (_MARKED.match(before) or before.isspace())
    return False


def _marked_spans(text):
    """(start, character) of each character of `text` to show as a marker, in order."""
    return [(m.start(), m.group()) for m in _MARKED.finditer(text) if not _kept(text, m.start())]


def marker(ch):
    """The visible stand-in for a control character: `⟨U+202E⟩`."""
    return f"⟨U+{ord(ch):04X}⟩"


def describe(ch):
    """The character's name, for a marker's tooltip."""
    name = unicodedata.name(ch, "")
    if name:
        return name
    category = unicodedata.category(ch)
    if category == "Cc":
        return "CONTROL CHARACTER"
    if category == "Cs":
        return "LONE SURROGATE"
    return "INVISIBLE CHARACTER"


def controls_marked(text):
    """`text` as plain text with each control or invisible character replaced by its marker,
    for where HTML cannot go (a CSV cell, an attribute)."""
    spans = _marked_spans(text)
    if not spans:
        return text
    parts, last = [], 0
    for at, ch in spans:
        parts.append(text[last:at])
        parts.append(marker(ch))
        last = at + len(ch)
    parts.append(text[last:])
    return "".join(parts)


@register.filter(needs_autoescape=True)
def shown(value, context="", autoescape=True):
    """`{{ value|shown }}`: the value escaped, its control characters as markers in a
    <span class="ctl"> titled with their name. Put it last, after `truncatechars` or `default`
    (they would cut or replace the markup), and before `linebreaksbr`, which keeps it.

    `{{ value|shown:"attr" }}` where markup cannot go, an attribute (a title) or the page's
    <title>: the markers as plain text, which the template then escapes as it does any value.

    Numbers, dates and None go through as they are, for the template to render as usual."""
    if value is None or isinstance(value, (int, float, Decimal)) or hasattr(value, "isoformat"):
        return value
    text = value if isinstance(value, str) else str(value)
    if context == "attr":
        return controls_marked(text)
    if context:
        raise template.TemplateSyntaxError(f'shown takes "attr" or nothing, not {context!r}')
    spans = _marked_spans(text)
    if not spans:
        return value if isinstance(value, SafeData) else text
    # Already-safe text (from `join`, which escapes) is not escaped twice.
    escape = escape_html if autoescape and not isinstance(value, SafeData) else str
    parts, last = [], 0
    for at, ch in spans:
        parts.append(escape(text[last:at]))
        parts.append(
            format_html('<span class="ctl" title="{}">{}</span>', describe(ch), marker(ch))
        )
        last = at + len(ch)
    parts.append(escape(text[last:]))
    # Each part is escaped text (or was safe already) or format_html's own markup.
    return mark_safe("".join(parts))  # noqa: S308
