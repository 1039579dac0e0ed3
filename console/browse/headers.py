"""What the console shows of a message's headers, at a cost that does not grow with them.

Ingest limits headers (MAX_HEADER_COUNT and the byte limits beside it), but a message stored
before those limits, or under higher ones, may hold any number: 200,000 headers once made the
message's page take seconds of CPU and the rendering of every one. So the page and the API show
at most HEADERS_SHOWN headers, the first as stored, with names and values cut to
HEADER_NAME_SHOWN and HEADER_VALUE_SHOWN characters, and say what they left out (how many
headers, how many bytes). The whole headers are one download away (the page's `message-headers`
link), or a page at a time through `GET /api/v1/messages/{id}/headers` (`headers_page`).

Stored headers are one JSON object of text (ingest writes them with `json.dumps`). They are read
a member at a time with the json module's own C scanner (`_members`), never parsed into one dict:
what is kept is bounded (the members shown, a page), and what is passed over is counted and let
go. Reading the stored text itself still costs its size; nothing after it does more than one
scan of it.
"""

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring

from console.ingest.records import header_bytes
from workers.engine.own_headers import FOREIGN_PREFIX

HEADERS_SHOWN = 100
HEADER_NAME_SHOWN = 1024
HEADER_VALUE_SHOWN = 2000
# The dead-letter record (RabbitMQ's x-death, Kafka's...) is read from at most this many
# members, and from none that ends past this many characters of the stored text: far more than
# ingest lets in, so every message stored within its limits is read whole.
HEADERS_READ = 2000
HEADERS_READ_CHARS = 4 * 1024 * 1024
# The API's pages of whole headers: at most this many, and no more once they hold this many
# bytes (a page holds at least one header, however long).
HEADERS_PAGE = 100
HEADERS_PAGE_MAX = 1000
HEADERS_PAGE_BYTES = 1024 * 1024

_DECODER = json.JSONDecoder()
# The object's opening (group 1: a first member's quote), the colon after a name, and what
# follows a value (group 1: a next member's comma and quote; otherwise the closing brace).
_OPEN = re.compile(r'[ \t\n\r]*\{[ \t\n\r]*(?:(")|\})')
_COLON = re.compile(r"[ \t\n\r]*:[ \t\n\r]*")
_NEXT = re.compile(r'[ \t\n\r]*(?:(,)[ \t\n\r]*"|\})')
_UNREADABLE = "the stored headers are not a JSON object"


class HeadersUnreadable(ValueError):
    """The stored headers are not a JSON object."""


def _members(text):
    """(name, value, size, end) of each member of the JSON object `text`, in order, one at a
    time: `size` is its name's and value's bytes as the ingest limits count them, `end` where it
    ends in the text. HeadersUnreadable when `text` is not a JSON object (raised when the scan
    reaches the fault). Strings are read by the json module's C scanner, as json.loads reads
    them."""
    opened = _OPEN.match(text)
    if opened is None:
        raise HeadersUnreadable(_UNREADABLE)
    if opened.group(1) is None:
        return
    at = opened.end()
    colon, following = _COLON.match, _NEXT.match
    try:
        while True:
            name, at = scanstring(text, at)
            found = colon(text, at)
            if found is None:
                raise HeadersUnreadable(_UNREADABLE)
            at = found.end()
            if text.startswith('"', at):
                value, at = scanstring(text, at + 1)
            else:
                # Ingest stores text only; anything else is shown as its JSON.
                value, at = _DECODER.raw_decode(text, at)
                value = json.dumps(value)
            yield name, value, header_bytes(name) + header_bytes(value), at
            found = following(text, at)
            if found is None:
                raise HeadersUnreadable(_UNREADABLE)
            if found.group(1) is None:
                return
            at = found.end()
    except json.JSONDecodeError as exc:
        raise HeadersUnreadable(f"{_UNREADABLE}: {exc}") from None


@dataclass(frozen=True)
class HeaderRow:
    name: str  # cut to HEADER_NAME_SHOWN characters
    value: str  # cut to HEADER_VALUE_SHOWN characters
    name_cut: int  # bytes of the name not shown (0: whole)
    value_cut: int  # bytes of the value not shown (0: whole)

    @property
    def foreign(self):
        """A producer's header named in the product's namespaces, set aside at ingest (R18)."""
        return self.name.startswith(FOREIGN_PREFIX)


@dataclass(frozen=True)
class HeadersShown:
    """What is shown of a message's headers: `rows`, the first HEADERS_SHOWN as stored, sorted
    by name; `count` and `size` (bytes of names and values) of them all; `more` headers and
    `more_bytes` left out after them; `unreadable` when the stored text is not a JSON object
    (the rows read before the fault are shown)."""

    rows: tuple = ()
    count: int = 0
    size: int = 0
    more: int = 0
    more_bytes: int = 0
    unreadable: bool = False

    @property
    def cut(self):
        """The names (as shown) of the headers whose name or value is cut."""
        return [row.name for row in self.rows if row.name_cut or row.value_cut]

    @property
    def complete(self):
        return not self.more and not self.unreadable and not self.cut


def _cut(text, most):
    if len(text) <= most:
        return text, 0
    head = text[:most]
    return head, header_bytes(text) - header_bytes(head)


def headers_shown(text, *, most=HEADERS_SHOWN):
    """What a page shows of the stored headers `text` (JSON text, or None for none)."""
    rows, count, size, more_bytes, unreadable = [], 0, 0, 0, False
    try:
        for name, value, member_size, _ in _members(text or "{}"):
            count += 1
            size += member_size
            if count > most:
                more_bytes += member_size
                continue
            name, name_cut = _cut(name, HEADER_NAME_SHOWN)
            value, value_cut = _cut(value, HEADER_VALUE_SHOWN)
            rows.append(HeaderRow(name, value, name_cut, value_cut))
    except HeadersUnreadable:
        unreadable = True
    rows.sort(key=lambda row: row.name)
    return HeadersShown(
        rows=tuple(rows),
        count=count,
        size=size,
        more=max(0, count - most),
        more_bytes=more_bytes,
        unreadable=unreadable,
    )


def header_map(text):
    """The stored headers `text` as a dict, for the readers of named headers (the dead-letter
    record): the first HEADERS_READ members within HEADERS_READ_CHARS of the text; {} if none
    can be read."""
    found = {}
    try:
        for name, value, _, end in _members(text or "{}"):
            if len(found) >= HEADERS_READ or end > HEADERS_READ_CHARS:
                break
            found[name] = value
    except HeadersUnreadable:
        pass
    return found


@dataclass(frozen=True)
class HeadersPage:
    """Whole headers, `headers` in stored order from `offset`; `count` of them all; `next`, the
    offset of the next page (None after the last)."""

    headers: dict
    offset: int
    count: int
    next: int | None


def headers_page(text, *, offset=0, limit=HEADERS_PAGE):
    """A page of the stored headers `text`, whole: at most `limit` from `offset`, and no more
    once they hold HEADERS_PAGE_BYTES. HeadersUnreadable if the text is not a JSON object."""
    page, page_bytes, count, following = {}, 0, 0, None
    for name, value, member_size, _ in _members(text or "{}"):
        count += 1
        if count <= offset or following is not None:
            continue
        if len(page) >= limit or (page and page_bytes + member_size > HEADERS_PAGE_BYTES):
            following = count - 1
            continue
        page[name] = value
        page_bytes += member_size
    return HeadersPage(headers=page, offset=offset, count=count, next=following)


def header_changes(before, after):
    """How two versions' headers (dicts) differ, by name: [(kind, name, before, after)], kind
    added, removed or changed, sorted by name: what an edit changed (console.browse.lineage, the
    request page)."""
    changes = []
    for name in sorted(set(before) | set(after)):
        if name not in before:
            changes.append(("added", name, None, after[name]))
        elif name not in after:
            changes.append(("removed", name, before[name], None))
        elif before[name] != after[name]:
            changes.append(("changed", name, before[name], after[name]))
    return changes
