"""console/textshown.py: control and invisible characters someone wrote are shown as markers,
`⟨U+202E⟩`, escaped as any text is, and ordinary text of any script is left as it is; and the
templates use the filter where markup cannot go only in its plain form."""

import re
import unicodedata
from pathlib import Path

import pytest
from django.conf import settings
from django.template import engines
from django.utils.safestring import SafeData, mark_safe

from console.textshown import controls_marked, describe, marker, shown

BIDI = [
    "\u061c",  # ARABIC LETTER MARK
    "\u200e",  # LEFT-TO-RIGHT MARK
    "\u200f",  # RIGHT-TO-LEFT MARK
    "\u202a",  # LEFT-TO-RIGHT EMBEDDING
    "\u202b",  # RIGHT-TO-LEFT EMBEDDING
    "\u202c",  # POP DIRECTIONAL FORMATTING
    "\u202d",  # LEFT-TO-RIGHT OVERRIDE
    "\u202e",  # RIGHT-TO-LEFT OVERRIDE
    "\u2066",  # LEFT-TO-RIGHT ISOLATE
    "\u2067",  # RIGHT-TO-LEFT ISOLATE
    "\u2068",  # FIRST STRONG ISOLATE
    "\u2069",  # POP DIRECTIONAL ISOLATE
]
INVISIBLE = [
    "\u200b",  # ZERO WIDTH SPACE
    "\u200c",  # ZERO WIDTH NON-JOINER
    "\u200d",  # ZERO WIDTH JOINER (between letters)
    "\u2060",  # WORD JOINER
    "\u2061",  # FUNCTION APPLICATION
    "\u2062",  # INVISIBLE TIMES
    "\u2063",  # INVISIBLE SEPARATOR
    "\u2064",  # INVISIBLE PLUS
    "\ufeff",  # ZERO WIDTH NO-BREAK SPACE
    "\u00ad",  # SOFT HYPHEN
    "\u180e",  # MONGOLIAN VOWEL SEPARATOR
    "\u115f",  # HANGUL CHOSEONG FILLER
    "\u1160",  # HANGUL JUNGSEONG FILLER
    "\u3164",  # HANGUL FILLER
    "\uffa0",  # HALFWIDTH HANGUL FILLER
    "\u034f",  # COMBINING GRAPHEME JOINER
    "\U000e0001",  # LANGUAGE TAG
    "\U000e0041",  # TAG LATIN CAPITAL LETTER A
    "\U000e007f",  # CANCEL TAG
]
CONTROLS = [
    chr(c) for c in [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0)]
]
EVERY_LISTED = BIDI + INVISIBLE + CONTROLS

ORDINARY = [
    "plain ASCII, with punctuation: 1 + 2 = 3 (ok?)",
    "tab\tnewline\ncarriage return\r\n",
    "عربي: الطلب رقم ٤٢ مرفوض",  # Arabic letters and digits
    "עברית: ההזמנה לא נמצאה",  # Hebrew
    "mixed: order עברית 42 عربي done",
    "Ünïcödé façade, Ελληνικά, Кириллица, 日本語, 한국어",
    "emoji 👍 😀 🎉",
    "👨\u200d👩\u200d👧\u200d👦 family, 👩🏽\u200d💻 coder, 🏳\ufe0f\u200d🌈 flag",  # ZWJ sequences
    "❤\ufe0f\u200d🔥 heart on fire, 🏃\u200d♀\ufe0f runner, 🧑\u200d🤝\u200d🧑 people",
    "❤\ufe0f red heart, ☺\ufe0e as text, 1\ufe0f\u20e3 keycap",  # one variation selector each
    "葛\U000e0100 an ideographic variant",
]


@pytest.mark.parametrize("ch", EVERY_LISTED, ids=lambda ch: f"U+{ord(ch):04X}")
def test_every_listed_character_becomes_its_marker(ch):
    code = f"{ord(ch):04X}"

    assert controls_marked(f"a{ch}b") == f"a⟨U+{code}⟩b"
    html = shown(f"a{ch}b")
    assert isinstance(html, SafeData)
    assert html == f'a<span class="ctl" title="{describe(ch)}">⟨U+{code}⟩</span>b'


def test_every_format_character_of_this_unicode_is_marked():
    """The list is written out (the `re` module has no \\p{Cf}): this fails once a newer
    Unicode database brings a format character the list does not hold."""
    missed = [
        f"U+{c:04X}"
        for c in range(0x110000)
        if unicodedata.category(chr(c)) in ("Cf", "Cc")
        and chr(c) not in "\t\n\r"
        and controls_marked(f"a{chr(c)}b") == f"a{chr(c)}b"
    ]

    assert missed == []


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_of_any_script_and_emoji_sequences_are_left_as_written(text):
    assert controls_marked(text) == text
    assert shown(text) == text


def test_a_joiner_is_marked_between_letters_but_kept_between_two_emoji():
    assert controls_marked("ad\u200dmin") == "ad⟨U+200D⟩min"
    assert controls_marked("👍\u200dx") == "👍⟨U+200D⟩x"
    assert controls_marked("\u200d👍") == "⟨U+200D⟩👍"
    assert controls_marked("👩\u200d💻") == "👩\u200d💻"


def test_variation_selectors_are_kept_one_after_a_character_and_marked_in_runs():
    hidden = "😀" + "\ufe01\ufe02\U000e0100"  # data hidden after an emoji

    assert controls_marked(hidden) == "😀\ufe01⟨U+FE02⟩⟨U+E0100⟩"
    assert controls_marked("\ufe0f at the start") == "⟨U+FE0F⟩ at the start"
    assert controls_marked("after a space \ufe0f") == "after a space ⟨U+FE0F⟩"


def test_the_override_is_shown_where_it_stands_and_what_follows_keeps_its_order():
    stored = "approve ids.txt\u202etxt.exe"

    assert controls_marked(stored) == "approve ids.txt⟨U+202E⟩txt.exe"


def test_markup_in_the_text_is_still_escaped_around_the_markers():
    html = shown('<script>alert(1)</script>\u202e"><img src=x onerror=alert(1)>')

    assert "<script>" not in html
    assert "<img" not in html
    assert html == (
        "&lt;script&gt;alert(1)&lt;/script&gt;"
        '<span class="ctl" title="RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span>'
        "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
    )


def test_in_a_template_it_escapes_marks_and_keeps_plain_text_in_attributes():
    template = engines["django"].from_string(
        '<p title="{{ v|shown:"attr" }}">{{ v|truncatechars:40|shown }}</p>'
        "<div>{{ n|shown|linebreaksbr }}</div>{{ none|shown|default:'-' }}{{ number|shown }}"
    )

    html = template.render(
        {"v": '<b>"x"</b>\u202eabc', "n": "a\u200b\nb", "none": None, "number": 7}
    )

    assert html == (
        '<p title="&lt;b&gt;&quot;x&quot;&lt;/b&gt;⟨U+202E⟩abc">'
        '&lt;b&gt;&quot;x&quot;&lt;/b&gt;<span class="ctl" title="RIGHT-TO-LEFT OVERRIDE">'
        "⟨U+202E⟩</span>abc</p>"
        '<div>a<span class="ctl" title="ZERO WIDTH SPACE">⟨U+200B⟩</span><br>b</div>-7'
    )


def test_text_already_made_safe_is_not_escaped_twice():
    html = shown(mark_safe("a &amp; b\u202e"))

    assert html == 'a &amp; b<span class="ctl" title="RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span>'


def test_a_control_character_without_a_name_is_described_by_its_kind():
    assert marker("\x1b") == "⟨U+001B⟩"
    assert describe("\x1b") == "CONTROL CHARACTER"
    assert describe("\ud800") == "LONE SURROGATE"
    assert controls_marked("x\ud800y") == "x⟨U+D800⟩y"


def test_no_template_puts_the_markup_form_inside_an_attribute_or_the_page_title():
    """Inside an attribute value (or <title>) the span would be text or break the attribute:
    there the filter is `shown:"attr"`."""
    misplaced = []
    for path in sorted(Path(settings.BASE_DIR, "templates").rglob("*.html")):
        text = path.read_text()
        in_attribute = re.findall(r'=\s*"[^"<>]*\{\{[^}]*\|shown \}\}', text)
        titles = re.findall(r"\{% block title %\}(.*?)\{% endblock %\}", text)
        in_title = [title for title in titles if "|shown }}" in title]
        misplaced += [f"{path.name}: {hit}" for hit in in_attribute + in_title]

    assert misplaced == []
