"""What a person must never read on a page (issue 45): a raw ISO time, "1 <plural>", and a code of
the glossary's code list with no title to explain it.

Pure functions, text in, a list of problems out (empty when the page reads well), so that the
Django-client test (tests/browse/test_every_page_reads.py) and the browser tests call the same
ones: `raw_iso_times` and `one_plural` take the text a person sees (a browser's
`inner_text("body")`, or better `visible_text(html)`, which leaves out what the page shows as
data: bodies, stacks and comments in <pre>, a body being edited), so that a message whose body
holds "2026-03-02T08:00:00Z" is not the page's fault; `raw_codes` takes the page's HTML, since
whether a code has a title is in its tags."""

import re
from html.parser import HTMLParser

from console.glossary import CODES

# 2026-11-27T09:12:03, 2026-11-27 09:12:03.123456+00:00, 2026-11-27 09:12Z: a time as a program
# writes it. The console's own format, "2026-11-27 09:12:03 UTC" (or the bare time in a column
# headed "(UTC)"), has a space, whole seconds and no offset.
_ISO = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"| \d{2}:\d{2}(?::\d{2})?(?:\.\d+(?:Z|[+-]\d{2}:?\d{2})?|(?:Z|[+-]\d{2}:?\d{2})))"
)

# A lone 1 (not 11, 0.1, R1, 1/5 or 1,000) followed on the same line by a plural, or after
# "these"/"those", or before a plural verb.
_ONE = r"(?<![\w.,/:+#-])1(?![\w.,]*\d)"
_ONE_PLURAL = re.compile(_ONE + r"[ \u00a0]+([A-Za-z]+s)\b")
_THESE_ONE = re.compile(r"\b(?:these|those|These|Those)[ \u00a0]+" + _ONE + r"\b")
_ONE_ARE = re.compile(_ONE + r"[ \u00a0]+(?:are|were|have)\b")
# Words ending in s that are singular, after a 1 ("1 process", "1 status").
_SINGULAR_S = frozenset(
    [
        "is",
        "was",
        "has",
        "this",
        "its",
        "as",
        "us",
        "yes",
        "plus",
        "bus",
        "alias",
        "status",
        "analysis",
        "series",
        "always",
    ]
)


def raw_iso_times(text):
    """The times in `text` written as a program writes them (ISO with a T, fractions of a second
    or an offset), each once, in order."""
    return list(dict.fromkeys(match.group(0) for match in _ISO.finditer(text)))


def one_plural(text):
    """The places `text` counts one thing with a plural: "1 messages", "these 1", "1 were"; each
    with a little of its context, in order."""
    problems = []
    for line in text.splitlines():
        for match in _ONE_PLURAL.finditer(line):
            word = match.group(1)
            if word.lower() in _SINGULAR_S or word.lower().endswith("ss"):
                continue
            problems.append(_context(line, match))
        for pattern in (_THESE_ONE, _ONE_ARE):
            problems.extend(_context(line, match) for match in pattern.finditer(line))
    return list(dict.fromkeys(problems))


def _context(line, match):
    return line[max(0, match.start() - 30) : match.end() + 10].strip()


def raw_codes(html):
    """The codes of the glossary's code list (console.glossary.CODES) that a person reads in
    `html` with no title to explain them: neither the element holding the code nor one around it
    has a `title`. Each once, in order."""
    parser = _Page()
    parser.feed(html)
    parser.close()
    found = []
    for text, titled in parser.runs:
        if titled:
            continue
        found.extend(match.group(0) for match in _codes_pattern().finditer(text))
    return list(dict.fromkeys(found))


def visible_text(html):
    """The text a person reads on `html`, roughly as a browser's innerText: no scripts, styles or
    attributes, runs of spaces made one, a line per block and a tab between table cells."""
    parser = _Page()
    parser.feed(html)
    parser.close()
    text = "".join(parser.text)
    lines = (re.sub(r" *\t[ \t]*", "\t", re.sub(r" +", " ", line)) for line in text.splitlines())
    return "\n".join(line.strip() for line in lines if line.strip())


_pattern = None


def _code_shaped(code):
    """A code no one would take for a word: NDLV, APPROVAL_OVER, url_env, request.created.
    Those of CODES that are words already ("queues", "login") are not looked for."""
    return code.isupper() or "_" in code or "." in code


def _codes_pattern():
    """One regular expression for every code, longest first, matched as a whole word (a dotted
    path or an option name is one word; "FAIL" does not match inside "FAILED")."""
    global _pattern
    if _pattern is None:
        codes = sorted(filter(_code_shaped, CODES), key=len, reverse=True)
        _pattern = re.compile(
            r"(?<![\w.])(?:" + "|".join(re.escape(code) for code in codes) + r")(?![\w]|\.\w)"
        )
    return _pattern


# Tags whose text nobody reads, or that hold what a producer or a person wrote (bodies, stacks,
# comments: <pre>; a body being edited: <textarea>), which the page shows as it is; tags that
# start a new line, cells that start a new column, tags that have no end.
_HIDDEN = frozenset({"script", "style", "template", "head", "title", "noscript", "pre", "textarea"})
_BLOCKS = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "br",
        "dd",
        "details",
        "dialog",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "legend",
        "li",
        "main",
        "nav",
        "ol",
        "option",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "thead",
        "tfoot",
        "tr",
        "ul",
    ]
)
_CELLS = frozenset({"td", "th"})
_VOID = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "source",
        "track",
        "wbr",
    ]
)


class _Page(HTMLParser):
    """The page's text, and each run of text with whether an element around it has a title."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []  # (tag, titled, hidden)
        self.text = []
        self.runs = []

    def handle_starttag(self, tag, attrs):
        if tag in _BLOCKS:
            self.text.append("\n")
        elif tag in _CELLS:
            self.text.append("\t")
        if tag in _VOID:
            return
        titled, hidden = self._inherited()
        names = dict(attrs)
        self.stack.append(
            (
                tag,
                titled or bool((names.get("title") or "").strip()),
                hidden or tag in _HIDDEN or "hidden" in names,
            )
        )

    def handle_startendtag(self, tag, attrs):
        if tag in _BLOCKS:
            self.text.append("\n")

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, -1, -1):
            if self.stack[depth][0] == tag:
                del self.stack[depth:]
                break
        if tag in _BLOCKS:
            self.text.append("\n")

    def handle_data(self, data):
        titled, hidden = self._inherited()
        if hidden:
            return
        shown = re.sub(r"\s+", " ", data)
        self.text.append(shown)
        self.runs.append((shown, titled))

    def _inherited(self):
        if not self.stack:
            return False, False
        _, titled, hidden = self.stack[-1]
        return titled, hidden
