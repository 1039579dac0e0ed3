"""NATS JetStream: the source (`CONNECTOR`) and the redrive sink (`publisher`).

Source. JetStream keeps no dead-letter queue: when a consumer gives up on a message (its
`max_deliver` reached, or an AckTerm) the server publishes an advisory on
`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>` (or `MSG_TERMINATED`) and the
message stays in the stream. Advisories are plain NATS messages, lost if nobody listens, so the
source captures them in a JetStream stream of its own (created when missing, before the first
drain: advisories of a consumer that gives up while Antidote is down wait there) and reads it
through a durable pull consumer. For each advisory it fetches the message by its stream sequence
(STREAM.MSG.GET) and hands both to `workers.brokers.nats_message.record_of`.

- An advisory is acknowledged after the batch is stored (the loop's guarantee); its message is
  then deleted from its stream when the source's `remove` option says so. Acknowledging first
  and deleting after means a consumer killed between the two leaves the message in the stream
  (as if `remove` were off), never a stored message whose advisory comes back naming nothing.
- An advisory that cannot be read, or whose message the stream no longer holds (deleted, purged,
  removed by its limits), is parked with the reason: published, with JetStream's publish
  acknowledgement, on `antidote.refused.<source>` in stream ANTIDOTE_REFUSED (created when
  missing), then acknowledged. A parked advisory's message is never deleted.

Sink. `publisher` is the configurable handler of a redrive queue: it publishes each message to
its original subject (or the queue's `subject`, or the request's own target) with JetStream's
publish acknowledgement and a Nats-Msg-Id (`nats_message.dedupe_id`), so a redrive retried after
an outage is stored once by the stream.

nats-py is asyncio: each link runs a private event loop of its own, only while one of its
methods runs, and each method is synchronous. A link is used by one thread (a source) or one
process (a sink: handlers run in forked children, so the sink connects lazily in the process
that publishes). The URL is read from the environment and never written in an error.
"""

import asyncio
import contextlib
import json
import logging
import os
import re
import time
from urllib.parse import urlsplit

import nats
import nats.errors
import nats.js.errors
from nats.js import api

from workers.brokers import nats_message as M
from workers.brokers.connector import (
    KIND_TITLES,
    Delivery,
    ProcessLink,
    SourceDown,
    redrive_destination,
)
from workers.engine.handlers import Deferred, PermanentFailure, configurable
from workers.redaction import scrubbed, url_secrets

log = logging.getLogger(__name__)

KIND = "nats"
CONNECT_TIMEOUT = 10.0
# A JetStream API request (stream info, a message get, a publish) answered after this long is a
# broken link: the loop reconnects and the unacknowledged advisories come back.
REQUEST_TIMEOUT = 10.0
# The longest a stored batch may take before its advisories are delivered again (the default of
# the `ack_wait` option): far more than a lake commit, short enough that a consumer killed
# mid-batch is not felt for long.
ACK_WAIT = 120.0
# Message gets in flight at once, per fetch: a batch of a thousand costs a few round trips, not
# a thousand.
GETS_IN_FLIGHT = 256
REFUSED_STREAM = "ANTIDOTE_REFUSED"
REFUSED_SUBJECTS = "antidote.refused.>"
REFUSED_REASON_HEADER = "Antidote-Refused-Reason"
REFUSED_SOURCE_HEADER = "Antidote-Source"
REFUSED_SUBJECT_HEADER = "Antidote-Advisory-Subject"
REASON_LIMIT = 1000
OPTIONS = ("advisory_stream", "consumer", "remove", "durable", "parking_stream", "ack_wait")
ACK_WAIT_LIMITS = (1, 3600)
ALL_CONSUMERS = ("*", "all")
# NATS names used in subjects or as a stream's or consumer's name: no '.', wildcard, space or
# path separator (nats-server refuses them; a '.' would also split a subject's tokens).
NAME_RE = re.compile(r"^[^.*>\s/\\]{1,200}$")
# Publishes handed to the event loop at once (see _PublishLink._send).
SEND_EVERY = 256
CLOSE_TIMEOUT = 2.0


class _Loop:
    """A private event loop, run only while a method of its owner waits on it."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()

    def run(self, coroutine, timeout):
        return self.loop.run_until_complete(asyncio.wait_for(coroutine, timeout))

    def close(self):
        with contextlib.suppress(Exception):
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        with contextlib.suppress(Exception):
            self.loop.close()


def _where(url):
    """host:port of a NATS URL, and the strings no error text may show (the URL, its user and
    password: a token is given as the user)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "localhost", parts.port or 4222
    except ValueError:
        return "an unreadable URL", (url,)
    return f"{host}:{port}", url_secrets(url, path=False)


def _check_url(url, url_env):
    if not url:
        raise SourceDown(f"the environment variable {url_env} (the NATS server's URL) is not set")
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        scheme = ""
    if scheme not in ("nats", "tls"):
        raise SourceDown(f"the URL in {url_env} must start with nats:// or tls://")


async def connect(url, name, *, timeout=CONNECT_TIMEOUT):
    """A connection that is never re-established: a lost one ends the link, and the source loop
    (or the sink's retry) opens a new one; nothing waits on a reconnection that may never come.
    Raises the error of the attempt (a refused connection, a refused login)."""
    errors = []

    async def quiet(exc):
        # nats-py logs every error with its traceback; the link raises what matters itself.
        errors.append(exc)

    try:
        return await nats.connect(
            url,
            name=name,
            connect_timeout=timeout,
            allow_reconnect=False,
            # nats-py tries a server once more than this before it gives up (0: for ever).
            max_reconnect_attempts=1,
            reconnect_time_wait=0.2,
            error_cb=quiet,
        )
    except nats.errors.NoServersError:
        if errors:
            raise errors[-1] from None
        raise


def _describe(exc):
    if isinstance(exc, OSError) and exc.errno:
        return os.strerror(exc.errno)
    if isinstance(exc, nats.js.errors.APIError) and exc.description:
        return f"({exc.code}) {exc.description}"
    # nats-py's errors mostly say only "nats: " and their class name says the rest.
    text = str(exc)
    if not text or text == "nats: ":
        return exc.__class__.__name__
    return f"{exc.__class__.__name__}: {text}"


# --- Source -------------------------------------------------------------------------------------


def capture_stream_name(stream):
    """The stream that captures the advisories of `stream`'s consumers, unless a source's
    `advisory_stream` option names another."""
    return f"ANTIDOTE_ADVISORIES_{stream}"


def advisory_subjects(stream, consumer="*"):
    """The subjects of the advisories a source of `stream` follows (of one consumer, or all)."""
    return [
        f"$JS.EVENT.ADVISORY.CONSUMER.{token}.{stream}.{consumer}"
        for token in M.ADVISORY_SUBJECT_TOKENS.values()
    ]


def capture_stream_config(name, subjects):
    """How a source creates a stream capturing `subjects` when it is missing. Whoever creates
    one before a source first runs (the demo: advisories published before anyone captures them
    are lost) creates it so."""
    return api.StreamConfig(
        name=name,
        subjects=subjects,
        storage=api.StorageType.FILE,
        # An advisory stays until it is drained (acknowledged), then goes: the stream holds
        # what waits, not a history.
        retention=api.RetentionPolicy.WORK_QUEUE,
    )


class _Entry:
    """What the link knows of one advisory: read, its message fetched, or why not."""

    __slots__ = ("advisory", "error", "original")

    def __init__(self, advisory=None, original=None, error=None):
        self.advisory = advisory
        self.original = original
        self.error = error


class _SourceLink:
    def __init__(self, config):
        self.config = config
        options = config.options or {}
        self.stream = config.drained
        self.capture = options.get("advisory_stream") or capture_stream_name(self.stream)
        consumer = options.get("consumer") or "*"
        self.consumer_filter = "*" if consumer in ALL_CONSUMERS else consumer
        self.remove = bool(options.get("remove", False))
        self.durable = options.get("durable") or "antidote-" + config.name.replace(".", "_")
        self.parking_stream = options.get("parking_stream") or REFUSED_STREAM
        self.parking_subject = f"antidote.refused.{config.name}"
        host, self.secrets = _where(config.url)
        self.where = f"NATS at {host}, stream {self.stream!r}"
        self.loop = _Loop()
        self.nc = None
        self.js = None
        self.sub = None
        self.parked = set()  # id() of the deliveries parked in the current batch
        self.unacked = 0  # deliveries fetched and not acknowledged
        self.max_ack_pending = 0
        self.parking_ready = False

    def subjects(self):
        return advisory_subjects(self.stream, self.consumer_filter)

    def _run(self, coroutine, timeout=REQUEST_TIMEOUT):
        return self.loop.run(coroutine, timeout)

    def open(self):
        if not NAME_RE.match(self.stream):
            raise SourceDown(
                f"{self.stream!r} is not a JetStream stream name (no '.', '*', '>' or spaces)"
            )
        self._run(self._open(), CONNECT_TIMEOUT + 3 * REQUEST_TIMEOUT)

    async def _open(self):
        self.nc = await connect(self.config.url, f"antidote source {self.config.name}")
        self.js = self.nc.jetstream(timeout=REQUEST_TIMEOUT)
        try:
            await self.js.stream_info(self.stream)
        except nats.js.errors.NotFoundError:
            raise SourceDown(f"stream {self.stream!r} does not exist") from None
        await self._ensure_stream(self.capture, self.subjects())
        config = api.ConsumerConfig(
            durable_name=self.durable,
            ack_policy=api.AckPolicy.EXPLICIT,
            deliver_policy=api.DeliverPolicy.ALL,
            ack_wait=float((self.config.options or {}).get("ack_wait", ACK_WAIT)),
            # Never given up on: an advisory that cannot be drained is parked, then acknowledged.
            max_deliver=-1,
            # What RabbitMQ calls prefetch: the most advisories out and not acknowledged.
            max_ack_pending=self.config.prefetch,
        )
        try:
            # An existing durable consumer (this source's, from an earlier run) is used as it is.
            info = await self.js.consumer_info(self.capture, self.durable)
        except nats.js.errors.NotFoundError:
            info = await self.js.add_consumer(self.capture, config=config)
        self.max_ack_pending = info.config.max_ack_pending or 0
        self.sub = await self.js.pull_subscribe_bind(durable=self.durable, stream=self.capture)

    async def _ensure_stream(self, name, subjects):
        """Create stream `name` capturing `subjects` when it does not exist; an existing one is
        used as it is (the operator's own, or ours from an earlier run)."""
        try:
            await self.js.stream_info(name)
            return
        except nats.js.errors.NotFoundError:
            pass
        try:
            await self.js.add_stream(capture_stream_config(name, subjects))
        except nats.js.errors.BadRequestError as exc:
            # Most often another stream already captures these subjects: that one can be named.
            raise SourceDown(
                f"stream {name!r} cannot be created to capture {', '.join(subjects)}: "
                f"{_describe(exc)} (a stream that already captures them can be named in the "
                "source's options)"
            ) from None

    def fetch(self, *, limit, timeout):
        if self.max_ack_pending > 0:
            # A pull asking for more than the consumer may have out waits its whole timeout for
            # what the server will not send; the loop keeps within `prefetch`, but a consumer
            # made by an earlier run may have a smaller limit.
            room = self.max_ack_pending - self.unacked
            if room <= 0:
                time.sleep(min(timeout, 0.05))
                return []
            limit = min(limit, room)
        deliveries = self._run(self._fetch(limit, timeout), timeout + 2 * REQUEST_TIMEOUT)
        self.unacked += len(deliveries)
        return deliveries

    async def _fetch(self, limit, timeout):
        try:
            messages = await self.sub.fetch(batch=limit, timeout=timeout)
        except TimeoutError:  # nats-py's TimeoutError is one too
            if self.nc.is_closed:
                raise nats.errors.ConnectionClosedError from None
            return []
        entries = []
        for msg in messages:
            try:
                advisory = M.advisory_of(msg.data)
            except M.OtherAdvisory:
                advisory = None
            except M.AdvisoryUnreadable as exc:
                entries.append((msg, _Entry(error=exc)))
                continue
            if advisory is None or (
                advisory.stream != self.stream
                or self.consumer_filter not in ("*", advisory.consumer)
            ):
                # Another kind of advisory, or another stream's or consumer's, in a capture
                # stream the operator shares: not this source's to drain.
                await msg.ack()
                continue
            entries.append((msg, _Entry(advisory=advisory)))
        limiter = asyncio.Semaphore(GETS_IN_FLIGHT)
        await asyncio.gather(*(self._original(e, limiter) for _, e in entries if e.advisory))
        return [Delivery(token=msg, body=msg.data, raw=e, size=len(msg.data)) for msg, e in entries]

    async def _original(self, entry, limiter):
        advisory = entry.advisory
        async with limiter:
            reply = await self.nc.request(
                f"$JS.API.STREAM.MSG.GET.{advisory.stream}",
                json.dumps({"seq": advisory.stream_seq}).encode(),
                timeout=REQUEST_TIMEOUT,
            )
        try:
            entry.original = M.original_of(
                reply.data, stream=advisory.stream, seq=advisory.stream_seq
            )
        except (M.OriginalGone, M.AdvisoryUnreadable) as exc:
            entry.error = exc

    def record(self, delivery):
        entry = delivery.raw
        if entry.error is not None:
            raise entry.error
        return M.record_of(
            advisory=entry.advisory,
            original=entry.original,
            into=self.config.into,
            source=self.config.name,
        )

    def park(self, delivery, reason):
        self._run(self._park(delivery, reason))
        self.parked.add(id(delivery))

    async def _park(self, delivery, reason):
        if not self.parking_ready:
            await self._ensure_stream(self.parking_stream, [REFUSED_SUBJECTS])
            self.parking_ready = True
        msg = delivery.token
        headers = {
            REFUSED_REASON_HEADER: reason[:REASON_LIMIT],
            REFUSED_SOURCE_HEADER: self.config.name,
            REFUSED_SUBJECT_HEADER: msg.subject,
            # The advisory's place in the capture stream: parked again after a crash between
            # the park and the acknowledgement, it is stored once.
            "Nats-Msg-Id": f"antidote-refused:{self.capture}:{msg.metadata.sequence.stream}",
        }
        await self.js.publish(
            self.parking_subject,
            delivery.body,
            headers=headers,
            stream=self.parking_stream,
            timeout=REQUEST_TIMEOUT,
        )
        log.warning(
            "source %s: an advisory was refused and parked in stream %s: %s",
            self.config.name,
            self.parking_stream,
            reason,
        )

    def ack(self, deliveries):
        parked, self.parked = self.parked, set()
        self.unacked = max(0, self.unacked - len(deliveries))
        removed = []
        if self.remove:
            removed = [
                d.raw.original
                for d in deliveries
                if id(d) not in parked and d.raw.original is not None
            ]
        self._run(self._ack(deliveries, removed), 2 * REQUEST_TIMEOUT + len(removed))

    async def _ack(self, deliveries, removed):
        for delivery in deliveries:
            await delivery.token.ack()
        # The server has read every acknowledgement once it answers the flush's PING.
        await self.nc.flush(timeout=REQUEST_TIMEOUT)
        limiter = asyncio.Semaphore(GETS_IN_FLIGHT)
        await asyncio.gather(*(self._delete(original, limiter) for original in removed))

    async def _delete(self, original, limiter):
        async with limiter:
            # Already gone is what `remove` wanted.
            with contextlib.suppress(nats.js.errors.NotFoundError):
                await self.js.delete_msg(original.stream, original.seq)

    def lag(self):
        info = self._run(self.js.consumer_info(self.capture, self.durable))
        return info.num_pending

    def close(self):
        if self.nc is not None and not self.nc.is_closed:
            with contextlib.suppress(Exception):
                self._run(self.nc.close(), CLOSE_TIMEOUT)
        self.loop.close()


class _Connector:
    kind = KIND
    title = KIND_TITLES[KIND]
    # Failures of the server or the link, logged by the loop without a traceback.
    errors = (nats.errors.Error, TimeoutError)
    sink = "workers.brokers.nats.publisher"

    def where(self, config):
        _check_url(config.url, config.url_env)
        return f"NATS at {_where(config.url)[0]}, stream {config.drained!r}"

    def open(self, config):
        _check_url(config.url, config.url_env)
        errors = self.options_errors(config.options or {})
        if errors:
            raise SourceDown("; ".join(errors))
        link = _SourceLink(config)
        try:
            link.open()
        except BaseException:
            link.close()
            raise
        return link

    def why(self, exc, config):
        stream = config.drained
        if isinstance(exc, SourceDown):
            return str(exc)
        if isinstance(exc, nats.errors.NoServersError | ConnectionRefusedError):
            return "cannot connect: no NATS server answers"
        if isinstance(exc, nats.errors.AuthorizationError):
            return f"the server refused the login (check the credentials in {config.url_env})"
        if isinstance(exc, nats.js.errors.ServiceUnavailableError | nats.errors.NoRespondersError):
            return "JetStream does not answer (is the server started with -js?)"
        if isinstance(exc, nats.js.errors.NoStreamResponseError):
            return "no stream took the refused advisory into the parking stream"
        if isinstance(exc, nats.js.errors.APIError):
            return f"JetStream refused a request about stream {stream!r}: {_describe(exc)}"
        if isinstance(exc, nats.errors.ConnectionClosedError | nats.errors.StaleConnectionError):
            return "connection lost"
        if isinstance(exc, TimeoutError):
            return f"the server did not answer within {REQUEST_TIMEOUT:g} s"
        if isinstance(exc, OSError):
            return f"cannot connect: {os.strerror(exc.errno) if exc.errno else exc!r}"
        return _describe(exc)

    def options_errors(self, options):
        errors = []
        if not isinstance(options, dict):
            return ["options must be a mapping"]
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            errors.append(
                f"unknown option(s) {', '.join(map(str, unknown))} (known: {', '.join(OPTIONS)})"
            )
        for name, what in (
            ("advisory_stream", "the stream that captures the advisories"),
            ("parking_stream", "the stream refused advisories are parked in"),
            ("durable", "the durable consumer's name"),
        ):
            value = options.get(name)
            if value is not None and (not isinstance(value, str) or not NAME_RE.match(value)):
                errors.append(
                    f"{name} ({what}) must be a JetStream name: no '.', '*', '>' or spaces"
                )
        consumer = options.get("consumer")
        if consumer is not None and not (
            isinstance(consumer, str) and (consumer in ALL_CONSUMERS or NAME_RE.match(consumer))
        ):
            errors.append("consumer must be a consumer's name, or 'all' for every consumer")
        ack_wait = options.get("ack_wait")
        low, high = ACK_WAIT_LIMITS
        if ack_wait is not None and (
            isinstance(ack_wait, bool)
            or not isinstance(ack_wait, int | float)
            or not low <= ack_wait <= high
        ):
            errors.append(f"ack_wait must be a number of seconds from {low} to {high}")
        if "remove" in options and not isinstance(options["remove"], bool):
            errors.append("remove must be true (delete a message once drained) or false")
        return errors

    def parking_name(self, config):
        stream = (config.options or {}).get("parking_stream") or REFUSED_STREAM
        return f"stream {stream}, subject antidote.refused.{config.name}"


CONNECTOR = _Connector()


# --- Sink ---------------------------------------------------------------------------------------


class RedriveFailed(Exception):
    """A publish that did not happen, or whose fate is unknown: transient, the backoff retries."""


class RedriveNotAcknowledged(RedriveFailed):
    """JetStream refused the publish, or its acknowledgement did not come in time."""


class RedriveNoStream(RedriveFailed):
    """No stream stores the subject: it may be created (again), so it is worth a retry."""


class RedriveConnectionFailed(RedriveFailed):
    """No connection to NATS, or it was lost before the publish was acknowledged."""


class NoRedriveTarget(PermanentFailure):
    """Nothing says where the message should go."""


@configurable
def publisher(
    *, url_env="ANTIDOTE_NATS_URL", subject=None, stream=None, ack_timeout=30.0, window=1000
):
    """The redrive handler of one queue: publishes each message to `subject` when set, else to
    the subject it came from (the request's own target first: `redrive_destination`).
    `stream`, when set, is the only stream that may take the publishes (Nats-Expected-Stream).
    Connects at the first call, in the process that publishes."""
    if not isinstance(url_env, str) or not url_env:
        raise ValueError("url_env must name an environment variable")
    if subject is not None and not _usable_subject(subject):
        raise ValueError("subject must be a NATS subject with no wildcard or space")
    if stream is not None and (not isinstance(stream, str) or not NAME_RE.match(stream)):
        raise ValueError("stream must be a JetStream stream name")
    if isinstance(ack_timeout, bool) or not isinstance(ack_timeout, int | float):
        raise ValueError("ack_timeout must be a number of seconds")
    if not ack_timeout > 0:
        raise ValueError("ack_timeout must be more than 0 seconds")
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError("window must be a whole number of at least 1")
    return NatsRedrive(
        url_env=url_env,
        subject=subject,
        stream=stream,
        ack_timeout=float(ack_timeout),
        window=window,
    )


def _usable_subject(subject):
    return (
        isinstance(subject, str)
        and 0 < len(subject) <= 1000
        and subject.isprintable()
        and not any(c.isspace() for c in subject)
        and all(token and token not in ("*", ">") for token in subject.split("."))
    )


class NatsRedrive:
    """Publishes are pipelined as redrive.py's are: each call queues its publish and returns a
    Deferred; the queued ones are written SEND_EVERY at a time, at most `window` wait for their
    acknowledgements at once, and `settle()`, called by the engine at the end of the batch,
    writes the rest, waits for their acknowledgements and closes the connection.

    Failures: a publish JetStream acknowledged is a success (a duplicate acknowledgement too: the
    stream already holds that redrive). One it refused (a full stream, a wrong expected stream),
    one no stream stores, and one whose acknowledgement never came (connection lost, timeout) are
    transient: retried by the queue's backoff, with the same Nats-Msg-Id, so the stream stores it
    once. A message that cannot be published as it is (no subject known, headers NATS cannot
    carry) is a permanent failure."""

    def __init__(self, *, url_env, subject, stream, ack_timeout, window):
        self.url_env = url_env
        self.subject = subject
        self.stream = stream
        self.ack_timeout = ack_timeout
        self.window = window
        self._link = ProcessLink(self._connect, RedriveConnectionFailed)
        # One object for every Deferred: the engine calls each distinct settle once.
        self._settle = self._link.settle

    def __call__(self, message):
        headers = message.headers
        target = redrive_destination(
            message,
            keys=("subject",),
            configured={"subject": self.subject},
            origin=lambda: M.origin_subject(headers),
        )
        if not target:
            raise NoRedriveTarget(
                "no nats-subject header says where it came from and the queue sets no subject"
            )
        subject = target["subject"]
        if not _usable_subject(subject):
            raise PermanentFailure(f"{subject!r} is not a NATS subject to publish to")
        try:
            out = M.publish_headers(headers, content_type=message.content_type)
        except ValueError as exc:
            raise PermanentFailure(str(exc)) from exc
        body = bytes(message.body)
        out["Nats-Msg-Id"] = M.dedupe_id(message.id, subject, body)
        link = self._link.get()
        deferred = Deferred(self._settle)
        try:
            link.publish(subject, body, out, deferred)
        except RedriveFailed:
            self._link.drop()
            raise
        return deferred

    def settle(self):
        """Wait for the acknowledgements of this process's publishes, then close its connection."""
        self._link.settle()

    def _connect(self):
        return _PublishLink.open(self.url_env, self.stream, self.ack_timeout, self.window)


class _PublishLink:
    def __init__(self, loop, nc, where, stream, ack_timeout, window):
        self.pid = os.getpid()
        self.loop = loop
        self.nc = nc
        self.js = nc.jetstream(timeout=ack_timeout, publish_async_max_pending=window)
        self.where = where
        self.stream = stream
        self.ack_timeout = ack_timeout
        self.window = window
        self.pending = {}  # future -> (deferred, subject): written, waiting for the ack
        self.queued = []  # (subject, body, headers, deferred): not written yet
        self.broken = None

    @classmethod
    def open(cls, url_env, stream, ack_timeout, window):
        url = os.environ.get(url_env)
        if not url:
            raise RedriveConnectionFailed(f"{url_env} is not set")
        try:
            _check_url(url, url_env)
        except SourceDown as exc:
            raise RedriveConnectionFailed(str(exc)) from None
        where, secrets = _where(url)
        loop = _Loop()
        try:
            nc = loop.run(
                connect(url, f"antidote redrive (pid {os.getpid()})"), CONNECT_TIMEOUT + 1
            )
        except Exception as exc:
            loop.close()
            # What the server said may quote the CONNECT it was sent, password and all.
            raise RedriveConnectionFailed(
                scrubbed(f"cannot connect to NATS at {where}: {_describe(exc)}", secrets)
            ) from None
        return cls(loop, nc, where, stream, ack_timeout, window)

    def publish(self, subject, body, headers, deferred):
        """Queue one publish; they go out together (`_send`), every SEND_EVERY and at the end."""
        if self.broken is not None:
            raise type(self.broken)(str(self.broken))
        self.queued.append((subject, body, headers, deferred))
        if len(self.queued) >= SEND_EVERY or len(self.queued) + len(self.pending) >= self.window:
            self._send()
            if len(self.pending) >= self.window:
                self._wait(lambda: len(self.pending) < self.window)

    def _send(self):
        """Write the queued publishes in one turn of the loop: a turn per message would cost
        more than the publish itself."""
        queued, self.queued = self.queued, []
        if not queued:
            return
        if self.broken is not None:
            for *_, deferred in queued:
                deferred.fail(type(self.broken)(str(self.broken)))
            return

        written = 0  # how many of `queued` are written or failed already

        async def send():
            nonlocal written
            for subject, body, headers, deferred in queued:
                try:
                    future = await self.js.publish_async(
                        subject, body, headers=headers, stream=self.stream
                    )
                except (nats.errors.BadHeaderError, nats.errors.BadSubjectError) as exc:
                    deferred.fail(
                        PermanentFailure(f"NATS cannot carry this message: {_describe(exc)}")
                    )
                except nats.errors.MaxPayloadError:
                    deferred.fail(
                        PermanentFailure(
                            f"the body is larger than the NATS server at {self.where} takes "
                            "(max_payload)"
                        )
                    )
                else:
                    self.pending[future] = (deferred, subject)
                    future.add_done_callback(self._on_done)
                written += 1

        try:
            self.loop.run(send(), self.ack_timeout)
        except Exception as exc:
            # The connection is lost, or the server stopped reading and nats-py's buffer is
            # full: what was written fails with the rest, as unacknowledged.
            lost = (
                self._not_acknowledged()
                if isinstance(exc, TimeoutError)
                else RedriveConnectionFailed(
                    f"connection to NATS at {self.where} lost before the publish: {_describe(exc)}"
                )
            )
            for *_, deferred in queued[written:]:
                deferred.fail(lost)
            self._give_up(lost)

    def _on_done(self, future):
        entry = self.pending.pop(future, None)
        if entry is None:
            return
        deferred, subject = entry
        if future.cancelled():
            deferred.fail(self._not_acknowledged())
            return
        exc = future.exception()
        if exc is None:
            deferred.done()
        elif isinstance(exc, nats.js.errors.NoStreamResponseError):
            deferred.fail(
                RedriveNoStream(f"no JetStream stream at {self.where} stores subject {subject!r}")
            )
        elif isinstance(exc, nats.js.errors.APIError):
            deferred.fail(
                RedriveNotAcknowledged(
                    f"JetStream at {self.where} refused the publish to {subject!r}: "
                    f"{_describe(exc)}"
                )
            )
        else:
            deferred.fail(
                RedriveConnectionFailed(
                    f"the publish to {subject!r} at {self.where} failed: {_describe(exc)}"
                )
            )

    def wait_all(self):
        self._send()
        self._wait(lambda: not self.pending)

    def _wait(self, enough):
        """Run the loop until `enough()`, the connection is lost or `ack_timeout` passes; then
        fail what is still unacknowledged."""
        deadline = time.monotonic() + self.ack_timeout

        async def until():
            while not enough() and not self.nc.is_closed and time.monotonic() < deadline:
                await asyncio.wait(list(self.pending), timeout=0.05)

        with contextlib.suppress(Exception):
            self.loop.loop.run_until_complete(until())
        if not enough():
            if self.nc.is_closed:
                self._give_up(
                    RedriveConnectionFailed(
                        f"connection to NATS at {self.where} lost before JetStream acknowledged"
                    )
                )
            else:
                self._give_up(self._not_acknowledged())

    def _not_acknowledged(self):
        return RedriveNotAcknowledged(
            f"JetStream at {self.where} did not acknowledge the publish within "
            f"{self.ack_timeout:g} s"
        )

    def _give_up(self, exc):
        pending, self.pending = self.pending, {}
        for deferred, _ in pending.values():
            deferred.fail(exc)
        if self.broken is None:
            self.broken = exc

    def close(self):
        if not self.nc.is_closed:
            with contextlib.suppress(Exception):
                self.loop.run(self.nc.close(), CLOSE_TIMEOUT)
        self.loop.close()
        if self.broken is None:
            self.broken = RedriveConnectionFailed(f"connection to NATS at {self.where} closed")
