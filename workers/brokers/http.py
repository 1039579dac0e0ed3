"""The handler that delivers a message to a web service: `workers.brokers.http.poster`.

Each call POSTs the message's body, as Antidote holds it (edited, if it was edited), to a URL:
the one a redrive request names (its `redrive_target`, key "url"), else the queue's `url`, else
the URL in the environment variable `url_env` (for a URL that holds a token). The request
carries:

- `Content-Type`: the message's content type (application/octet-stream when it has none);
- the message's own headers, as they were received: everything but Antidote's bookkeeping
  (workers.engine.own_headers: the source that drained it, the typed copy of AMQP
  properties, where a drain took the message from) and the headers HTTP itself or the signature
  own (HTTP_OWNED: Host, Content-Length, Connection, ..., and webhook-*);
- a Standard Webhooks signature (https://www.standardwebhooks.com): `webhook-id` (the message
  id: the same for every attempt, so a receiver can drop a second copy), `webhook-timestamp`
  (seconds since the epoch) and `webhook-signature` (`v1,` + base64 of HMAC-SHA256 over
  "id.timestamp.body"), keyed with the `whsec_...` secret in the environment variable
  `secret_env`. A receiver checks it with any Standard Webhooks library: `Webhook(secret)
  .verify(body, headers)`.

Outcomes (SEMANTICS R5, R6): a 2xx answer is success. 408, 429 and 5xx answers, timeouts and
connection errors are transient: the queue's backoff retries them, and a `Retry-After` (seconds
or an HTTP date) later than the backoff sets the wait (TransientFailure's `retry_after`). Any
other answer (3xx: redirects are not followed, a signed request is not sent on to another
address; other 4xx) is permanent, with the status and the answer's first bytes as the reason.

Reasons name the destination as scheme://host:port only: a URL's path or query may hold a
token. The secret is read from the environment by the process that sends, never kept in
options or written anywhere.

Where it may send (workers.outbound): a URL is read once, as urllib3 reads it, and refused when
another reader could see another host in it; internal addresses (loopback, link-local, private,
...) are refused unless OUTBOUND_ALLOW_INTERNAL lets one through (for demos and tests only):
when the queue is loaded for an address written in its `url`, and when sending for every
address the host resolves to, the connection going to the addresses checked (no second
lookup). A refused destination is a permanent failure (DestinationRefused) and nothing is sent.

Processes: the engine builds the handler once and calls it in forked children, so the HTTP
session (its pool of keep-alive connections) is made lazily by the process that sends and
reused for all its calls, never inherited from a parent.
"""

import base64
import binascii
import contextlib
import hashlib
import hmac
import math
import os
import re
import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import requests
from standardwebhooks import Webhook

from workers.brokers.connector import redrive_destination
from workers.engine.handlers import PermanentFailure, TransientFailure, configurable
from workers.engine.own_headers import is_product_name
from workers.outbound import (
    AllowanceError,
    DestinationError,
    OutboundRefused,
    allowance_from_environment,
    destination_check,
    destination_parse,
    failure_cause,
    guarded_session,
)
from workers.redaction import library_logs_redacted, scrubbed, url_secrets

# urllib3 logs each request's path at DEBUG (a URL's token may be there): redacted, in every
# process that sends, the Spark executors' included.
library_logs_redacted()

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
TRANSIENT_STATUSES = frozenset({408, 429})
SECRET_PREFIX = "whsec_"  # noqa: S105 - the prefix of every secret, no secret
# How much of a refusing answer becomes the reason: enough for a validation error's first line.
REASON_BYTES = 200
# An answer is read up to this much so its connection can carry the next request; past it the
# connection is closed instead of read on.
DRAIN_BYTES = 64 * 1024
DEFAULT_CONTENT_TYPE = "application/octet-stream"
# RFC 9110 field names are tokens; a value may not hold CR, LF or NUL (a header could be forged).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FORBIDDEN_IN_VALUE = re.compile(r"[\r\n\x00]")


class DeliveryFailed(TransientFailure):
    """No answer, or an answer that says "later" (408, 429, 5xx): the backoff retries."""


class DeliveryRefused(PermanentFailure):
    """The receiver refused the message (a 4xx other than 408 and 429, or a redirect)."""


class NoDeliveryUrl(PermanentFailure):
    """Nothing says where the message should go, or what says it is not an http(s) URL."""


class DestinationRefused(PermanentFailure):
    """The destination is an internal address the product does not send to
    (workers.outbound): nothing was sent."""


class Unsendable(PermanentFailure):
    """A header of the message cannot be written in an HTTP request."""


@configurable
def poster(
    *,
    url=None,
    url_env=None,
    secret_env="ANTIDOTE_WEBHOOK_SECRET",  # noqa: S107 - the variable's name, not its value
    timeout=10.0,
):
    """The HTTP delivery handler of one queue (see the module docstring). Sends nothing and reads
    no environment until its first call."""
    if url is not None and url_env is not None:
        raise ValueError("set url or url_env, not both")
    if url is not None:
        if not isinstance(url, str):
            raise ValueError("url must be text")
        # Read as it will be sent, and an address written in it checked (names are resolved and
        # checked when sending: building a handler looks nothing up).
        try:
            destination_check(url, allowance=allowance_from_environment())
        except (DestinationError, OutboundRefused, AllowanceError) as exc:
            raise ValueError(f"url {exc}") from None
    if url_env is not None and (not isinstance(url_env, str) or not url_env):
        raise ValueError("url_env must name an environment variable")
    if not isinstance(secret_env, str) or not secret_env:
        raise ValueError("secret_env must name an environment variable")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ValueError("timeout must be a number of seconds more than 0")
    return Poster(url=url, url_env=url_env, secret_env=secret_env, timeout=float(timeout))


class Poster:
    def __init__(self, *, url, url_env, secret_env, timeout):
        self.url = url
        self.url_env = url_env
        self.secret_env = secret_env
        self.timeout = timeout
        self._pid = None
        self._session = None
        self._signer = None

    def __call__(self, message):
        url, where = self._url(message)
        headers = _forwarded_headers(message.headers)
        body = bytes(message.body)
        session, signer = self._open()
        headers["Content-Type"] = _header_value(message.content_type or DEFAULT_CONTENT_TYPE)
        headers.update(signer.headers(message.id, body))
        try:
            response = session.post(
                url,
                data=body,
                headers=headers,
                timeout=self.timeout,
                allow_redirects=False,
                stream=True,
            )
        except OutboundRefused as exc:
            raise DestinationRefused(f"not sent to {where}: {exc}") from None
        except DestinationError as exc:
            raise NoDeliveryUrl(f"the delivery URL {exc}") from None
        except requests.Timeout:
            raise DeliveryFailed(f"{where} did not answer within {self.timeout:g} s") from None
        except requests.ConnectionError as exc:
            raise DeliveryFailed(f"cannot reach {where}: {failure_cause(exc)}") from None
        except (requests.RequestException, ValueError) as exc:
            # Anything else refused before sending (a header requests or http.client will not
            # write): the same message would be refused again.
            raise Unsendable(f"cannot send to {where}: {exc.__class__.__name__}") from None
        with response:
            try:
                _outcome(response, where, url_secrets(url))
            finally:
                _drain(response)

    def destinations_check(self, *, allowance, resolver=None):
        """Check the queue's own `url` as far as can be before sending: every address its name
        resolves to now (console.queues loads a queue file with it). Raises DestinationError or
        OutboundRefused."""
        if self.url is not None:
            destination_check(self.url, allowance=allowance, resolve=True, resolver=resolver)

    def _url(self, message):
        configured = {"url": self.url}
        if self.url_env is not None:
            configured["url"] = os.environ.get(self.url_env)
        chosen = redrive_destination(
            message, keys=("url",), configured=configured, origin=lambda: None
        )
        if chosen is None:
            if self.url_env is not None:
                # Transient: a fixed deployment delivers it; R3 quarantines it meanwhile.
                raise DeliveryFailed(f"{self.url_env} is not set")
            raise NoDeliveryUrl("no URL: the queue sets no url or url_env and the request none")
        url = chosen["url"]
        # Only the URL of url_env may hold a user and password (the request's and the queue's
        # own were refused any when they were written).
        from_env = self.url_env is not None and url == configured["url"]
        try:
            destination = destination_parse(url, credentials=from_env)
        except DestinationError as exc:
            # The URL itself is not repeated: a mistyped one may hold its token anywhere.
            raise NoDeliveryUrl(f"the delivery URL {exc}") from None
        return url, destination.origin

    def _open(self):
        pid = os.getpid()
        if self._pid != pid:
            # A session made by a parent process shares its sockets with it.
            self._session = self._signer = None
            self._pid = pid
        if self._signer is None:
            self._signer = _Signer.from_environment(self.secret_env)
        if self._session is None:
            # Only to addresses the guard checks as it connects; no proxy settings or ~/.netrc
            # credentials from the environment: what goes out is what the queue says.
            try:
                self._session = guarded_session()
            except AllowanceError as exc:
                # Transient: a fixed deployment delivers it; R3 quarantines it meanwhile.
                raise DeliveryFailed(str(exc)) from None
        return self._session, self._signer


class _Signer:
    """Standard Webhooks signatures with one secret."""

    def __init__(self, key):
        self.key = key
        self.webhook = Webhook(key)

    @classmethod
    def from_environment(cls, name):
        secret = os.environ.get(name)
        if not secret:
            raise DeliveryFailed(f"{name} is not set: it must hold the whsec_... signing secret")
        if not secret.startswith(SECRET_PREFIX):
            raise DeliveryFailed(f"{name} is not a Standard Webhooks secret (whsec_...)")
        try:
            key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if not key:
            raise DeliveryFailed(f"{name} is not a Standard Webhooks secret: whsec_ + base64")
        return cls(key)

    def headers(self, message_id, body):
        timestamp = int(time.time())
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            # The library signs text only; the spec signs the body's bytes, whatever they are.
            signed = f"{message_id}.{timestamp}.".encode() + body
            digest = hmac.new(self.key, signed, hashlib.sha256).digest()
            signature = "v1," + base64.b64encode(digest).decode("ascii")
        else:
            moment = datetime.fromtimestamp(timestamp, tz=UTC)
            signature = self.webhook.sign(msg_id=message_id, timestamp=moment, data=text)
        return {
            "webhook-id": _header_value(message_id),
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signature,
        }


def _outcome(response, where, secrets=()):
    status = response.status_code
    if 200 <= status < 300:
        return
    answered = f"{where} answered {status}"
    if response.reason:
        answered += f" {scrubbed(_inert(response.reason[:REASON_BYTES]), secrets)}"
    if status in TRANSIENT_STATUSES or status >= 500:
        failure = DeliveryFailed(
            answered,
            retry_after=retry_after_of(response.headers.get("Retry-After"), now=time.time()),
        )
        if failure.retry_after is not None:
            failure.args = (f"{answered}; Retry-After {failure.retry_after:g} s",)
        raise failure
    first = _first_bytes(response, secrets)
    if 300 <= status < 400:
        answered += " (a redirect: not followed; set the queue's URL to where it points)"
    if first:
        answered += f": {first}"
    raise DeliveryRefused(answered, exception_type=f"http.{status}")


def retry_after_of(value, *, now):
    """Seconds to wait from `now` (epoch seconds) as a Retry-After value says: a whole number
    of seconds or an HTTP date; None when absent or unreadable, 0 for a date already past."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit() and value.isascii():
        # Past 12 digits it is more than any limit: int() of a long run of digits is not worth it.
        return float(int(value)) if len(value) <= 12 else math.inf
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        return None  # HTTP dates are GMT; a date without a zone is not one
    return max(0.0, moment.timestamp() - now)


def _forwarded_headers(headers):
    forwarded = {}
    for name, value in (headers or {}).items():
        lowered = name.lower()
        if is_product_name(lowered) or lowered in HTTP_OWNED:
            continue
        if value is None:
            continue
        value = value if isinstance(value, str) else str(value)
        if not _TOKEN.fullmatch(name):
            raise Unsendable(f"the header name {_inert(name[:80])!r} is not valid in HTTP")
        if _FORBIDDEN_IN_VALUE.search(value):
            raise Unsendable(f"the header {name!r} holds a line break or NUL, not valid in HTTP")
        forwarded[name] = _header_value(value)
    return forwarded


def _header_value(value):
    # http.client writes text values as Latin-1; UTF-8 bytes go as they are (RFC 9110's
    # obs-text) and read back as the same text by a receiver that decodes UTF-8.
    return value if value.isascii() else value.encode("utf-8")


def _drain(response):
    # The outcome is known, a success perhaps: whatever the tail of the answer does (urllib3's
    # own errors included), it only costs the connection, never the outcome.
    with contextlib.suppress(Exception):
        response.raw.read(DRAIN_BYTES)


def _first_bytes(response, secrets=()):
    """The start of the answer, inert, with `secrets` scrubbed: a receiver may quote the request
    back, and its URL's path or query may be a token. Read past the cut by the longest secret,
    so that one quoted across it is scrubbed whole."""
    margin = max(map(len, secrets), default=0)
    try:
        head = response.raw.read(REASON_BYTES + margin, decode_content=True) or b""
    except Exception:  # whatever the body does, the status is the reason
        return ""
    text = scrubbed(_inert(head.decode("utf-8", errors="replace")), secrets)
    return text[:REASON_BYTES].strip()


def _inert(text):
    # An answer's text is the receiver's: newlines or control characters in it must not forge
    # lines in a log or reorder what a person reads.
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else " " for c in text)
