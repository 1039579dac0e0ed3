"""A message's headers as an HTTP request carries them: its own headers as received, but for
Antidote's bookkeeping and what HTTP or the signature own."""

import re

from workers.brokers.base import Unsendable
from workers.engine.own_headers import is_product_name

# Set by HTTP or by the signature for this request: a message's own copy would contradict them.
HTTP_OWNED = frozenset(
    {
        "connection",
        "content-length",
        "content-type",
        "expect",
        "host",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "webhook-id",
        "webhook-signature",
        "webhook-timestamp",
    }
)
# RFC 9110 field names are tokens; a value may not hold CR, LF or NUL (a header could be forged).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FORBIDDEN_IN_VALUE = re.compile(r"[\r\n\x00]")


def forwarded_headers(headers):
    forwarded = {}
    for name, value in (headers or {}).items():
        lowered = name.lower()
        if is_product_name(lowered) or lowered in HTTP_OWNED:
            continue
        if value is None:
            continue
        value = value if isinstance(value, str) else str(value)
        if not _TOKEN.fullmatch(name):
            raise Unsendable(f"the header name {inert(name[:80])!r} is not valid in HTTP")
        if _FORBIDDEN_IN_VALUE.search(value):
            raise Unsendable(f"the header {name!r} holds a line break or NUL, not valid in HTTP")
        forwarded[name] = header_value(value)
    return forwarded


def header_value(value):
    # http.client writes text values as Latin-1; UTF-8 bytes go as they are (RFC 9110's
    # obs-text) and read back as the same text by a receiver that decodes UTF-8.
    return value if value.isascii() else value.encode("utf-8")


def inert(text):
    # A receiver's answer or a header's name is someone else's text: newlines or control
    # characters in it must not forge lines in a log or reorder what a person reads.
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else " " for c in text)
