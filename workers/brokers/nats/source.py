"""The NATS JetStream source (`CONNECTOR`, a `Source`, workers.brokers.base).

JetStream keeps no dead-letter queue: when a consumer gives up on a message (its
`max_deliver` reached, or an AckTerm) the server publishes an advisory on
`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>` (or `MSG_TERMINATED`) and the
message stays in the stream. Advisories are plain NATS messages, lost if nobody listens, so the
source captures them in a JetStream stream of its own (created when missing, before the first
drain: advisories of a consumer that gives up while Antidote is down wait there) and reads it
through a durable pull consumer. For each advisory it fetches the message by its stream sequence
(STREAM.MSG.GET) and hands both to `workers.brokers.nats.record.record_of`.

- An advisory is acknowledged after the batch is stored (the loop's guarantee); its message is
  then deleted from its stream when the source's `remove` option says so. Acknowledging first
  and deleting after means a consumer killed between the two leaves the message in the stream
  (as if `remove` were off), never a stored message whose advisory comes back naming nothing.
- An advisory that cannot be read, or whose message the stream no longer holds (deleted, purged,
  removed by its limits), is parked with the reason: published, with JetStream's publish
  acknowledgement, on `antidote.refused.<source>` in stream ANTIDOTE_REFUSED (created when
  missing), then acknowledged. A parked advisory's message is never deleted.

The sink is workers.brokers.nats.sink; the connection, workers.brokers.nats.connection.
"""

import asyncio
import contextlib
import json
import logging
import os
import time

import nats
import nats.errors
import nats.js.errors
from nats.js import api

from workers.brokers.base import Delivery, SourceDown
from workers.brokers.nats import record as M
from workers.brokers.nats.connection import (
    CLOSE_TIMEOUT,
    CONNECT_TIMEOUT,
    NAME_RE,
    REQUEST_TIMEOUT,
    Loop,
    check_url,
    connect,
    describe,
    where_of,
)
from workers.brokers.registry import NATS

log = logging.getLogger(__name__)

KIND = NATS.kind

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
OPTIONS = NATS.options
ACK_WAIT_LIMITS = (1, 3600)
ALL_CONSUMERS = ("*", "all")


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


class NatsSourceLink:
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
        host, self.secrets = where_of(config.url)
        self.where = f"NATS at {host}, stream {self.stream!r}"
        self.loop = Loop()
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
                f"{describe(exc)} (a stream that already captures them can be named in the "
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


class NatsSource:
    kind = KIND
    title = NATS.title
    # Failures of the server or the link, logged by the loop without a traceback.
    errors = (nats.errors.Error, TimeoutError)
    sink = NATS.redrive_handler

    def where(self, config):
        check_url(config.url, config.url_env)
        return f"NATS at {where_of(config.url)[0]}, stream {config.drained!r}"

    def open(self, config):
        check_url(config.url, config.url_env)
        errors = self.options_errors(config.options or {})
        if errors:
            raise SourceDown("; ".join(errors))
        link = NatsSourceLink(config)
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
            return f"JetStream refused a request about stream {stream!r}: {describe(exc)}"
        if isinstance(exc, nats.errors.ConnectionClosedError | nats.errors.StaleConnectionError):
            return "connection lost"
        if isinstance(exc, TimeoutError):
            return f"the server did not answer within {REQUEST_TIMEOUT:g} s"
        if isinstance(exc, OSError):
            return f"cannot connect: {os.strerror(exc.errno) if exc.errno else exc!r}"
        return describe(exc)

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


CONNECTOR = NatsSource()
