"""The HTTP sink: the handler `workers.brokers.http.poster` delivers a message to a web service.

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
  `secret_env` (workers.brokers.formats.standard_webhooks). A receiver checks it with any
  Standard Webhooks library: `Webhook(secret).verify(body, headers)`.

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

import contextlib
import math
import os
import time
from email.utils import parsedate_to_datetime

import requests

from workers.brokers.base import (
    DeliveryFailed,
    DeliveryRefused,
    DestinationRefused,
    NoDeliveryUrl,
    Unsendable,
    env_name_checked,
    redrive_destination,
    seconds_checked,
)
from workers.brokers.formats.standard_webhooks import Signer
from workers.brokers.http.record import forwarded_headers, header_value, inert
from workers.engine.handlers import configurable
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

TRANSIENT_STATUSES = frozenset({408, 429})
# How much of a refusing answer becomes the reason: enough for a validation error's first line.
REASON_BYTES = 200
# An answer is read up to this much so its connection can carry the next request; past it the
# connection is closed instead of read on.
DRAIN_BYTES = 64 * 1024
DEFAULT_CONTENT_TYPE = "application/octet-stream"


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
    env_name_checked("secret_env", secret_env)
    return HttpSink(
        url=url,
        url_env=url_env,
        secret_env=secret_env,
        timeout=seconds_checked("timeout", timeout),
    )


class HttpSink:
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
        headers = forwarded_headers(message.headers)
        body = bytes(message.body)
        session, signer = self._open()
        headers["Content-Type"] = header_value(message.content_type or DEFAULT_CONTENT_TYPE)
        headers.update(
            (name, header_value(value)) for name, value in signer.headers(message.id, body).items()
        )
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
            self._signer = Signer.from_environment(self.secret_env)
        if self._session is None:
            # Only to addresses the guard checks as it connects; no proxy settings or ~/.netrc
            # credentials from the environment: what goes out is what the queue says.
            try:
                self._session = guarded_session()
            except AllowanceError as exc:
                # Transient: a fixed deployment delivers it; R3 quarantines it meanwhile.
                raise DeliveryFailed(str(exc)) from None
        return self._session, self._signer


def _outcome(response, where, secrets=()):
    status = response.status_code
    if 200 <= status < 300:
        return
    answered = f"{where} answered {status}"
    if response.reason:
        answered += f" {scrubbed(inert(response.reason[:REASON_BYTES]), secrets)}"
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
    text = scrubbed(inert(head.decode("utf-8", errors="replace")), secrets)
    return text[:REASON_BYTES].strip()
