"""How a message body is shown: JSON and XML pretty-printed, text as it is, anything else as a
hex dump. Only the first BODY_SHOWN_BYTES are rendered; the raw download has the rest.

Bodies are attacker-controlled. Everything here returns plain text that the template escapes;
XML is parsed with defusedxml, so a body with a DTD or entities (billion laughs, external
entities) is refused by the parser and shown as text, never expanded.
"""

import difflib
import json
from dataclasses import dataclass
from urllib.parse import quote
from xml.dom.minidom import Node
from xml.parsers.expat import ExpatError

from defusedxml import DefusedXmlException
from defusedxml.minidom import parseString
from django.http import HttpResponse

BODY_SHOWN_BYTES = 64 * 1024
HEX_WIDTH = 16

JSON, XML, TEXT, BINARY = "json", "xml", "text", "binary"


@dataclass(frozen=True)
class RenderedBody:
    kind: str  # json, xml, text or binary
    text: str
    size: int  # bytes of the whole body
    shown: int  # bytes of it rendered
    truncated: bool


def body_render(data, *, content_type=""):
    """The first BODY_SHOWN_BYTES of `data` as text fit to show, and what kind it was."""
    data = bytes(data or b"")
    head = data[:BODY_SHOWN_BYTES]
    truncated = len(data) > len(head)
    kind, text = _render(head, content_type=(content_type or "").lower(), truncated=truncated)
    return RenderedBody(kind=kind, text=text, size=len(data), shown=len(head), truncated=truncated)


def _render(head, *, content_type, truncated):
    text = _text_of(head, truncated=truncated)
    if text is None:
        return BINARY, hexdump(head)
    # A truncated document cannot parse; it is shown as the text it is.
    if not truncated:
        if _looks_json(text, content_type):
            pretty = _json_pretty(text)
            if pretty is not None:
                return JSON, pretty
        if _looks_xml(text, content_type):
            pretty = _xml_pretty(text)
            if pretty is not None:
                return XML, pretty
    return TEXT, text


def _text_of(head, *, truncated):
    """The bytes as text, or None if they are not text (invalid UTF-8, or NUL bytes)."""
    if b"\x00" in head:
        return None
    try:
        return head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # The cut at BODY_SHOWN_BYTES may split a character: that alone does not make it binary.
        if truncated and exc.start >= len(head) - 3 and exc.reason == "unexpected end of data":
            return head[: exc.start].decode("utf-8")
        return None


def _looks_json(text, content_type):
    return "json" in content_type or text.lstrip()[:1] in ("{", "[")


def _looks_xml(text, content_type):
    return "xml" in content_type or text.lstrip()[:1] == "<"


def _json_pretty(text):
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return None


def _xml_pretty(text):
    try:
        document = parseString(text, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except (ExpatError, DefusedXmlException, ValueError, RecursionError):
        # Malformed, or refused for its DTD or entities: shown as the text it is.
        return None
    try:
        _strip_blank_text(document)
        pretty = document.toprettyxml(indent="  ")
    except RecursionError:
        return None
    if not text.lstrip().startswith("<?xml"):
        # toprettyxml adds a declaration the body did not have.
        pretty = pretty.split("\n", 1)[1] if pretty.startswith("<?xml") else pretty
    return pretty.rstrip("\n")


def _strip_blank_text(node):
    """Whitespace between elements would be indented again by toprettyxml, doubling it."""
    for child in list(node.childNodes):
        if child.nodeType == Node.TEXT_NODE and not child.data.strip():
            node.removeChild(child)
        else:
            _strip_blank_text(child)


def hexdump(data, *, width=HEX_WIDTH):
    """Offset, hex bytes and printable ASCII, `width` bytes a line (like `hexdump -C`)."""
    lines = []
    for offset in range(0, len(data), width):
        chunk = data[offset : offset + width]
        hexes = " ".join(f"{b:02x}" for b in chunk)
        ascii_ = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk)
        lines.append(f"{offset:08x}  {hexes:<{width * 3 - 1}}  |{ascii_}|")
    return "\n".join(lines)


def raw_body_response(data, *, message_id):
    """A body as a download that no browser renders: an attachment of opaque bytes, not sniffed,
    and sandboxed should anything open it anyway."""
    response = HttpResponse(data, content_type="application/octet-stream")
    response["Content-Disposition"] = _attachment(message_id)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "sandbox"
    response["Cache-Control"] = "private, no-store"
    return response


def headers_download_response(text, *, message_id):
    """A message's headers as stored (one JSON object) as a download, guarded as a body is: the
    page shows only their start (console.browse.headers)."""
    response = HttpResponse(text, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = _attachment(message_id, ".headers.json")
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "sandbox"
    response["Cache-Control"] = "private, no-store"
    return response


def _attachment(message_id, suffix=".bin"):
    # The id is attacker-controlled: the ASCII name keeps only safe characters, the UTF-8 name
    # is percent-encoded (RFC 6266), so no quote or newline reaches the header.
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in message_id)
    safe = (safe.strip(".") or "message")[:100]
    encoded = quote(message_id, safe="")
    return f"attachment; filename=\"{safe}{suffix}\"; filename*=UTF-8''{encoded}{suffix}"


# A diff of two bodies shows at most this many lines (its hunks' headers included).
DIFF_LINES_SHOWN = 2000
ADDED, REMOVED, SAME, HUNK = "added", "removed", "same", "hunk"


@dataclass(frozen=True)
class BodyDiff:
    binary: bool  # one of them is not text: they differ, and no line diff is made
    identical: bool
    lines: tuple = ()  # (ADDED | REMOVED | SAME | HUNK, text)
    truncated: bool = False  # cut at DIFF_LINES_SHOWN lines
    partial: bool = False  # a body was longer than BODY_SHOWN_BYTES: only its start is compared


def body_diff(original, edited, *, content_type="", context=3):
    """A line diff of two versions of a body, as they are shown (JSON and XML pretty-printed, so
    an edit inside one long line shows as the lines it changed), of their first BODY_SHOWN_BYTES.
    Plain text throughout: the caller's template escapes it."""
    original, edited = bytes(original or b""), bytes(edited or b"")
    if original == edited:
        return BodyDiff(binary=False, identical=True)
    before = body_render(original, content_type=content_type)
    after = body_render(edited, content_type=content_type)
    if BINARY in (before.kind, after.kind):
        return BodyDiff(binary=True, identical=False)
    lines, truncated = [], False
    diff = difflib.unified_diff(
        before.text.splitlines(), after.text.splitlines(), lineterm="", n=context
    )
    for line in diff:
        if line.startswith(("---", "+++")) and not lines:
            continue  # the file header: there are no file names
        if len(lines) >= DIFF_LINES_SHOWN:
            truncated = True
            break
        if line.startswith("@@"):
            lines.append((HUNK, line))
        elif line.startswith("+"):
            lines.append((ADDED, line[1:]))
        elif line.startswith("-"):
            lines.append((REMOVED, line[1:]))
        else:
            lines.append((SAME, line[1:]))
    return BodyDiff(
        binary=False,
        identical=False,
        lines=tuple(lines),
        truncated=truncated,
        partial=before.truncated or after.truncated,
    )
