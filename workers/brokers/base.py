"""What every broker package shares: the `Source` and `Sink` protocols, the shapes a source
hands the consumer loop, and the errors, each defined here once.

A **source** (`Source`, one per broker kind, named in workers.brokers.registry) opens a
`SourceLink` for one configured source. The console's consumer process runs the same loop for
every kind (console.ingest.consumers): fetch deliveries, turn each into an ingest record, store
the batch (lake commit and database), then park what ingest refused and acknowledge the batch on
the broker. So for every broker, by construction:

- a delivery is acknowledged only after the lake commit: a consumer killed at any moment loses
  nothing, and the broker hands the unacknowledged deliveries over again;
- a record's id is stable across those redeliveries (ingest is idempotent): nothing is stored
  twice;
- a delivery that cannot be read or that ingest refuses is parked with its reason (kept on the
  broker, beside what was drained), never dropped and never redelivered for ever.

A link is used by one thread, but for `record`, which the loop calls from its storing thread (a
batch is mapped and stored while the next one is fetched): `record` reads the delivery only, never
the connection. Its errors are the broker client's own; `Source.why` turns them into a sentence
for people, and no sentence holds a secret (the URL's password is scrubbed by the loop with
`SourceLink.secrets`).

A **sink** (`Sink`) is what a configurable handler (workers.engine.handlers.configurable) named
in a redrive queue's `handler` returns: it publishes one message per call, returns a `Deferred`
when it waits for the broker's acknowledgement in bulk (then `settle` waits for it), and says
where the message goes with `redrive_destination`: the request's own target first, then the
queue's handler options, then the message's origin.

Pure Python: no Django, no broker client (the packages import their own).
"""

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from workers.engine.handlers import Deferred, PermanentFailure, TransientFailure

# --- Errors ---------------------------------------------------------------------------------------
# Their class names are what a failed delivery records as its exception type: renaming one changes
# how failures group.


class SourceDown(Exception):
    """The source cannot be drained now (not configured, broker away, what it drains is missing).
    The message is for people and holds no secret; the loop backs off and tries again."""


class RedriveFailed(Exception):
    """A publish that did not happen, or whose fate is unknown: transient, the backoff retries."""


class RedriveConnectionFailed(RedriveFailed):
    """No connection to the broker, or it was lost before the publish was confirmed."""


class RedriveNotConfirmed(RedriveFailed):
    """RabbitMQ refused the publish (nack) or did not confirm it in time."""


class RedriveUnroutable(RedriveFailed):
    """RabbitMQ returned the publish: no queue is bound for its exchange and routing key."""


class RedriveNotAcknowledged(RedriveFailed):
    """JetStream refused the publish, or its acknowledgement did not come in time."""


class RedriveNoStream(RedriveFailed):
    """No stream stores the subject: it may be created (again), so it is worth a retry."""


class RedriveRefused(RedriveFailed):
    """Redis answered the XADD with an error (the key is not a stream, out of memory, ...): an
    operator can set that right, so it is tried again."""


class NoRedriveTarget(PermanentFailure):
    """Nothing says where the message should go."""


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


# --- Protocols ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceConfig:
    """One configured source, as the loop hands it to its connector (the BrokerSource row's
    fields, without Django). `url` is read from the environment variable `url_env` by the loop;
    `options` are the kind's own settings, checked by `Connector.options_errors` at load time."""

    name: str
    kind: str
    url_env: str
    url: str
    drained: str  # what is drained: a RabbitMQ queue, a JetStream stream, a Redis stream key
    into: str  # the Antidote queue its messages land in
    prefetch: int
    batch_size: int
    options: dict = field(default_factory=dict)


@dataclass
class Delivery:
    """One message taken from the broker and not yet acknowledged. `token` is the link's own
    (a delivery tag, a stream sequence, an entry id); `size` counts toward the batch's bytes."""

    token: Any
    body: bytes
    raw: Any = None  # whatever else the link needs to make the record or park it
    size: int = 0


class SourceLink(Protocol):
    """An open connection draining one source."""

    where: str  # "NATS at 127.0.0.1:4222, stream 'ORDERS'": no secret
    secrets: tuple  # strings to scrub from any error text (the URL, its password)

    def fetch(self, *, limit: int, timeout: float) -> list[Delivery]:
        """Up to `limit` deliveries, waiting at most `timeout` seconds for the first; [] when
        none came. Raises SourceDown (or the client's error) when the link is broken."""

    def record(self, delivery: Delivery) -> dict:
        """The ingest record (id, queue, body, headers, ...) of a delivery; raises anything when
        it cannot be read, and the loop parks it with that reason."""

    def park(self, delivery: Delivery, reason: str) -> None:
        """Keep a refused delivery on the broker with its reason (confirmed) before it is
        acknowledged: a parking queue, subject or stream beside the drained one."""

    def ack(self, deliveries: list[Delivery]) -> None:
        """Acknowledge stored deliveries: the broker may forget them (or, per source, delete)."""

    def lag(self) -> int | None:
        """How many dead letters wait on the broker, when it says; None when unknown."""

    def close(self) -> None:
        """Close the connection; never raises."""


@runtime_checkable
class Source(Protocol):
    """A kind of source (one per broker, `<broker>.source.CONNECTOR`). Beside these, the loop
    uses when present (each optional):

    - `errors`: a tuple of the client's exception classes, failures of the broker that the loop
      logs as a warning (anything else is logged with its traceback);
    - `where(config) -> str`: where the source's broker is, for people and without secrets,
      before connecting (so a failed `open` is reported as "<where>: <why>"); raises SourceDown
      when the URL cannot be read;
    - `sink`: the dotted path of the kind's redrive handler, which a source's `redrive_queue`
      must have."""

    kind: str
    title: str  # "NATS JetStream", for people: the registry's title of the kind

    def open(self, config: SourceConfig) -> SourceLink:
        """Connect and check that what is drained exists; raises SourceDown or the client's
        error."""

    def why(self, exc: BaseException, config: SourceConfig) -> str:
        """A sentence for people about a failure of this connector's client."""

    def options_errors(self, options: dict) -> list[str]:
        """What is wrong with a source's options, in sentences; [] when they are good."""

    def parking_name(self, config: SourceConfig) -> str:
        """Where refused deliveries are parked, for the queues page."""


@runtime_checkable
class Sink(Protocol):
    """A redrive handler of one queue, as its package's `publisher` factory returns it."""

    def __call__(self, message) -> Any:
        """Publish one message: None once the broker has it, a `Deferred` when the broker's word
        comes in bulk; raises RedriveFailed (transient) or NoRedriveTarget (permanent)."""

    def settle(self) -> None:
        """Wait for the broker's word on this process's publishes (each Deferred settled)."""


# --- Shared by the sinks --------------------------------------------------------------------------

# After a sink's failed connect, its calls of the next few seconds fail at once with the same
# reason: a batch against a broker that is down ends in moments, not one connect timeout per
# message.
RECONNECT_PAUSE = 2.0


class ConnectFailures:
    """The last failed connect of a sink in this process (a forked child tries its own)."""

    def __init__(self, failed):
        self.failed = failed  # the sink's exception for "no connection"
        self._last = None  # (pid, monotonic time, reason)

    def check(self):
        """Raise `failed` with the last reason while the pause after it lasts."""
        last = self._last
        mine = last is not None and last[0] == os.getpid()
        if mine and time.monotonic() - last[1] < RECONNECT_PAUSE:
            raise self.failed(last[2])

    def record(self, reason):
        self._last = (os.getpid(), time.monotonic(), reason)

    def clear(self):
        self._last = None


class ProcessLink:
    """A sink's connection in this process: opened by `opener` at the first publish, opened
    again once broken (a link whose `broken` is set), paused after a failed connect
    (ConnectFailures), and never used from a forked child: a link opened by the parent shares
    its socket, and a word on it from the child would corrupt the parent's conversation with
    the broker. A link has `pid`, `wait_all()` and `close()`."""

    def __init__(self, opener, failed):
        self._opener = opener
        self._failures = ConnectFailures(failed)
        self.link = None

    def get(self):
        pid = os.getpid()
        link = self.link
        if link is not None and link.pid == pid:
            if getattr(link, "broken", None) is None:
                return link
            link.close()
        self.link = None
        self._failures.check()
        try:
            self.link = self._opener()
        except self._failures.failed as exc:
            self._failures.record(str(exc))
            raise
        self._failures.clear()
        return self.link

    def drop(self):
        """Forget the link after a failed publish: the next one opens another."""
        self.link = None

    def settle(self):
        """Wait for the broker's word on this process's publishes, then close its link."""
        link = self.link
        if link is None or link.pid != os.getpid():
            return
        self.link = None
        link.wait_all()
        link.close()


class LinkedSink:
    """A sink that publishes over one ProcessLink: a subclass gives `_connect`, which opens a
    link with `publish(*args, deferred)`, `wait_all()`, `close()` and `pid`."""

    def __init__(self):
        self._link = ProcessLink(self._connect, RedriveConnectionFailed)
        # One object for every Deferred: the engine calls each distinct settle once, and each
        # `self.settle` lookup would make a new bound method.
        self._settle = self._link.settle

    def settle(self):
        """Wait for the broker's word on this process's publishes, then close its link."""
        self._link.settle()

    def _publish(self, *args):
        """Hand one publish to this process's link: a Deferred the link settles."""
        link = self._link.get()
        deferred = Deferred(self._settle)
        try:
            link.publish(*args, deferred)
        except RedriveFailed:
            self._link.drop()
            raise
        return deferred


def env_name_checked(name, value):
    """A handler option that names an environment variable: ValueError unless it does."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must name an environment variable")
    return value


def seconds_checked(name, value):
    """A handler option that is a number of seconds more than 0, as a float; ValueError else."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a number of seconds more than 0")
    return float(value)


def window_checked(window):
    """How many publishes may wait for the broker's word at once: a whole number of at least 1."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError("window must be a whole number of at least 1")
    return window


def redrive_destination(message, *, keys, configured, origin):
    """Where a sink sends `message`: {key: value} for `keys`, from the first that names any of
    them among the request's own target (the `redrive_target` of the version the request wrote,
    never a header: R18), the queue's handler options (`configured`) and the message's origin
    (`origin()`, read from the records its source wrote); None when nothing says. A request's
    target that is not a JSON object is ignored."""
    chosen = None
    text = message.redrive_target
    if text:
        try:
            requested = json.loads(text)
        except ValueError:
            requested = None
        if isinstance(requested, dict):
            chosen = {k: requested[k] for k in keys if requested.get(k) not in (None, "")}
    if not chosen:
        chosen = {k: configured[k] for k in keys if configured.get(k) not in (None, "")}
    if not chosen:
        chosen = origin()
    return chosen or None
