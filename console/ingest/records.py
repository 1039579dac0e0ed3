"""One record, checked before it is stored (console.ingest.services.messages_ingest): its id,
queue, body, content type and conversation id as SEMANTICS says, its headers against the header
limits, and a broker source's own headers (R18). A record passes as the row to write, or raises
RecordRefused saying what a person should know."""

import base64
import binascii
import hashlib
import json

from django.conf import settings

from console.ingest.files import FIELDS
from workers.engine.own_headers import PRODUCT_PREFIXES, headers_stored, is_product_name

ID_MAX_LENGTH = 200
# A broker source's records carry, beside a message's fields, what the source wrote about it.
SOURCE_FIELDS = FIELDS | {"own_headers"}
TEXT_TYPE = "text/plain"
BINARY_TYPE = "application/octet-stream"


class RecordRefused(Exception):
    def __init__(self, message, message_id=None):
        super().__init__(message)
        self.message = message
        self.message_id = message_id


def _text_ok(value):
    """True if the string can be stored (a JSON string may hold a lone surrogate; UTF-8 cannot)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _base64_decode(text, message_id):
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        pass
    try:
        # Base64 wrapped over lines (MIME style) is still base64.
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise RecordRefused("body is not valid base64", message_id) from None


def _optional_text(record, name, message_id):
    value = record.get(name)
    if value is None or value == "":
        # An empty conversation id would put every such message in one conversation (R13).
        return None
    if type(value) is not str or not _text_ok(value):
        raise RecordRefused(f"{name} must be a string", message_id)
    return value


def _id_check(message_id):
    """The record's id, or RecordRefused saying what is wrong with it (not only that it is
    wrong)."""
    expected = f"a string of 1 to {ID_MAX_LENGTH} printable characters"
    if message_id is None:
        raise RecordRefused(f"id is required: {expected}")
    if type(message_id) is not str:
        raise RecordRefused(f"id must be {expected}, not a JSON {_json_type(message_id)}")
    if not message_id:
        raise RecordRefused(f"id is empty: it must be {expected}")
    if len(message_id) > ID_MAX_LENGTH:
        raise RecordRefused(
            f"id is at most {ID_MAX_LENGTH:,} characters; this one has {len(message_id):,}"
        )
    if not message_id.isprintable():
        at, char = next((i, c) for i, c in enumerate(message_id) if not c.isprintable())
        raise RecordRefused(
            f"id must be printable text; character {at + 1} is U+{ord(char):04X}, which is not"
        )
    return message_id


def _json_type(value):
    if type(value) is bool:
        return "boolean"
    if type(value) in (int, float):
        return "number"
    return {dict: "object", list: "array", bytes: "binary value"}.get(type(value), "value")


def _own_headers(own, message_id):
    """A broker source's records of a message (workers.engine.own_headers), checked: only names
    of the product's namespaces, with text values."""
    if type(own) is not dict or not all(
        type(k) is str and is_product_name(k) and type(v) is str for k, v in own.items()
    ):
        raise RecordRefused(
            "a source's own headers must be text, named in the product's namespaces "
            f"({', '.join(PRODUCT_PREFIXES)})",
            message_id,
        )
    return own


# An error quotes at most this much of a header's name.
HEADER_NAME_QUOTED = 60


def header_bytes(text):
    """The size of a header name or value as the header limits count it: its UTF-8 bytes (a lone
    surrogate, which a JSON string may hold, as the three bytes it would take)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _header_named(name):
    # A name is the producer's text: quoted (repr escapes controls) and cut, for an error line.
    return repr(name[:HEADER_NAME_QUOTED]) + ("..." if len(name) > HEADER_NAME_QUOTED else "")


def headers_limit_check(headers, message_id):
    """RecordRefused when the headers a message would be stored with (a dict of text) are over a
    limit: MAX_HEADER_COUNT headers, MAX_HEADER_NAME_BYTES a name, MAX_HEADER_VALUE_BYTES a
    value, MAX_HEADERS_TOTAL_BYTES for names and values together (console/settings.py says why
    those defaults). The error names the limit and its setting, as the body's does."""
    count, most = len(headers), settings.MAX_HEADER_COUNT
    if count > most:
        # Before looking at a single header: a flood costs one len().
        raise RecordRefused(
            f"{count:,} headers, over the limit of {most:,} headers (MAX_HEADER_COUNT)",
            message_id,
        )
    name_most = settings.MAX_HEADER_NAME_BYTES
    value_most = settings.MAX_HEADER_VALUE_BYTES
    total = 0
    for name, value in headers.items():
        # header_bytes, inlined for ASCII: every message of every route comes through here.
        size = len(name) if name.isascii() else header_bytes(name)
        value_size = len(value) if value.isascii() else header_bytes(value)
        if size > name_most:
            raise RecordRefused(
                f"header name {_header_named(name)} is {size:,} bytes, over the limit of "
                f"{name_most:,} bytes (MAX_HEADER_NAME_BYTES)",
                message_id,
            )
        if value_size > value_most:
            raise RecordRefused(
                f"header {_header_named(name)} is {value_size:,} bytes, over the limit of "
                f"{value_most:,} bytes (MAX_HEADER_VALUE_BYTES)",
                message_id,
            )
        total += size + value_size
    if total > settings.MAX_HEADERS_TOTAL_BYTES:
        raise RecordRefused(
            f"headers are {total:,} bytes (names and values), over the limit of "
            f"{settings.MAX_HEADERS_TOTAL_BYTES:,} bytes (MAX_HEADERS_TOTAL_BYTES)",
            message_id,
        )


def record_check(record, queues, limit, own_allowed=False):
    """The row to write for one record, or RecordRefused saying why not. `own_allowed`: the record
    comes from a broker source of the product, whose records of the message are in its
    `own_headers` (console.ingest.consumers); from any other route that field is unknown."""
    if type(record) is not dict:
        raise RecordRefused("a message must be a JSON object")
    message_id = _id_check(record.get("id"))
    fields = SOURCE_FIELDS if own_allowed else FIELDS
    if not fields.issuperset(record):
        extra = record.keys() - fields
        raise RecordRefused(
            f"unknown field(s) {', '.join(sorted(map(repr, extra)))}; "
            f"a message has {', '.join(sorted(FIELDS))}",
            message_id,
        )

    queue = record.get("queue")
    if type(queue) is not str:
        raise RecordRefused("queue is required: the name of an existing queue", message_id)
    if queue not in queues:
        raise RecordRefused(f"unknown queue {queue!r}: no queue of that name exists", message_id)

    body = record.get("body")
    encoding = record.get("body_encoding")
    if encoding not in (None, "text", "base64"):
        raise RecordRefused('body_encoding must be "text" or "base64"', message_id)
    if type(body) is str:
        if encoding == "base64":
            data = _base64_decode(body, message_id)
            default_type = BINARY_TYPE
        else:
            try:
                data = body.encode("utf-8")
            except UnicodeEncodeError:
                raise RecordRefused("body is not valid Unicode text", message_id) from None
            default_type = TEXT_TYPE
    elif type(body) is bytes:
        # A Parquet binary column: the bytes as they are (or base64 text, if said so).
        data = _base64_decode(body, message_id) if encoding == "base64" else body
        default_type = BINARY_TYPE
    elif body is None:
        raise RecordRefused('body is required (send "" for an empty body)', message_id)
    else:
        raise RecordRefused("body must be a string", message_id)
    if len(data) > limit:
        raise RecordRefused(
            f"body is {len(data)} bytes, over the limit of {limit} bytes (MAX_BODY_BYTES)",
            message_id,
        )

    content_type = record.get("content_type")
    if content_type is None:
        content_type = default_type
    elif type(content_type) is not str or not content_type or not content_type.isprintable():
        raise RecordRefused("content_type must be a non-empty string", message_id)

    headers = record.get("headers")
    if headers is None:
        headers = {}
    elif type(headers) is not dict or not all(
        type(k) is str and type(v) is str for k, v in headers.items()
    ):
        raise RecordRefused("headers must be an object of string to string", message_id)
    # R18: a name of the product's namespaces is the product's to write, whatever the route: a
    # producer's is kept under a foreign name, then a broker source's own records are added.
    own = record.get("own_headers") if own_allowed else None
    headers = headers_stored(headers, _own_headers(own, message_id) if own else None)
    headers_limit_check(headers, message_id)
    # Default arguments: json reuses its one C encoder (sort_keys would build a new one).
    headers_text = json.dumps(headers) if headers else "{}"

    return (
        message_id,
        queue,
        data,
        hashlib.sha256(data).hexdigest(),
        content_type,
        headers_text,
        _optional_text(record, "conversation_id", message_id),
        _optional_text(record, "sender", message_id),
    )
