"""The RabbitMQ consumer: drains each broker source's queue into Antidote, for as long as it runs.

One thread per enabled source (`consumers_run`), each a loop of connect, consume, back off
(`source_consume`). A batch of deliveries is stored first (`messages_ingest` commits to the lake
and the DB before it returns) and acknowledged after, so a consumer killed at any point loses
nothing: RabbitMQ redelivers what was not acknowledged, and ingest, being idempotent, stores each
message once. What ingest refuses is published, with confirms, to a parking queue beside the
drained one (`<broker_queue>.antidote-refused`) before it is acknowledged: never dropped, never
requeued for ever.

The broker's URL is read from the environment variable the source names and goes no further than
pika: errors name the host, port and vhost, never the URL or its password.
"""

import contextlib
import logging
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlparse

import pika
import pika.exceptions as amqp
from django.db import DatabaseError, connection
from django.utils import timezone

from console.ingest.services import messages_ingest
from console.queues.models import CONSUMER_STATES, BrokerSource
from console.queues.sources import source_drained, source_heartbeat, source_state_set
from workers.brokers.amqp_message import PROPERTY_NAMES, record_of

log = logging.getLogger(__name__)

KIND = "rabbitmq"
REFUSED_SUFFIX = ".antidote-refused"
REFUSED_REASON_HEADER = "x-antidote-refused-reason"
REFUSED_USER_HEADER = "x-antidote-refused-user-id"
REASON_LIMIT = 1000
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0
HEARTBEAT_SECONDS = 5.0
SOURCES_SECONDS = 30.0
# How long the consume loop blocks at most: the longest a stop waits for a quiet queue.
POLL_SECONDS = 0.5
# A broker short of memory or disk blocks publishers; a parking publish gives up after this
# rather than hang the source, which then reconnects like after any other failure.
BLOCKED_SECONDS = 60
# A batch is stored at this many bytes of bodies whatever its count: a thousand bodies of the
# largest size allowed would not fit in memory.
BATCH_BYTES = 64 * 1024 * 1024
# A steady trickle never leaves `batch_seconds` of quiet: a batch is stored once its first
# delivery has waited this many times `batch_seconds`.
BATCH_AGE_FACTOR = 5

STARTING, CONNECTING, CONSUMING, DOWN, STOPPED = CONSUMER_STATES


class SourceDown(Exception):
    """The source cannot be drained now. The message is for people and holds no secret."""


@dataclass(frozen=True)
class _Broker:
    parameters: pika.URLParameters
    where: str
    secrets: tuple

    def scrub(self, text):
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text


def backoff_seconds(attempt, *, rand=random.random):
    """The wait before reconnection `attempt` (from 0): 1 s doubling up to 60 s, less up to a
    quarter at random so that sources cut off together do not all come back at once."""
    delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2**attempt)
    return delay * (1 - rand() / 4)


def _broker(source):
    url = os.environ.get(source.url_env)
    if not url:
        raise SourceDown(f"the environment variable {source.url_env} (the broker's URL) is not set")
    if urlparse(url).scheme not in ("amqp", "amqps"):
        raise SourceDown(f"the URL in {source.url_env} must start with amqp:// or amqps://")
    try:
        parameters = pika.URLParameters(url)
    except Exception:
        # The parser's message may quote the URL, password and all.
        raise SourceDown(
            f"the URL in {source.url_env} cannot be read (amqp://user:password@host:port/vhost)"
        ) from None
    parameters.connection_attempts = 1
    if parameters.blocked_connection_timeout is None:
        parameters.blocked_connection_timeout = BLOCKED_SECONDS
    password = getattr(parameters.credentials, "password", "") or ""
    return _Broker(
        parameters=parameters,
        where=f"RabbitMQ at {parameters.host}:{parameters.port}, vhost {parameters.virtual_host!r}",
        secrets=tuple(s for s in (url, password) if s),
    )


def _why(exc, source):
    """What went wrong, for people (the caller scrubs secrets and says where)."""
    if isinstance(exc, SourceDown):
        return str(exc)
    if isinstance(exc, amqp.ProbableAuthenticationError):
        return f"the broker refused the login (check the user and password in {source.url_env})"
    if isinstance(exc, amqp.ChannelClosedByBroker):
        if exc.reply_code == 404:
            return f"queue {source.broker_queue!r} does not exist ({exc.reply_text})"
        return f"the broker closed the channel: ({exc.reply_code}) {exc.reply_text}"
    if isinstance(exc, amqp.ConnectionClosedByBroker):
        return f"the broker closed the connection: ({exc.reply_code}) {exc.reply_text}"
    if isinstance(exc, amqp.ProbableAccessDeniedError):
        return f"access refused: {exc.args[0] if exc.args else exc}"
    if isinstance(exc, amqp.IncompatibleProtocolError):
        # What pika reports when the peer hangs up before the AMQP handshake is done.
        return "the connection was closed before the AMQP handshake (is it RabbitMQ? a proxy?)"
    if isinstance(exc, amqp.StreamLostError):
        return f"connection lost: {exc}"
    if isinstance(exc, amqp.AMQPConnectionError):
        # pika wraps the socket's error in its own: show the innermost, which says what happened.
        inner = exc
        while True:
            nested = getattr(inner, "exception", None) or (inner.args[0] if inner.args else None)
            if not isinstance(nested, Exception):
                break
            inner = nested
        if isinstance(inner, OSError) and inner.strerror:
            return f"cannot connect: {inner.strerror}"
        return f"cannot connect: {inner!r}"
    if isinstance(exc, OSError):
        return f"cannot connect: {exc.strerror or exc!r}"
    if isinstance(exc, amqp.UnroutableError | amqp.NackError):
        return "the broker did not take a refused message into the parking queue"
    return f"{exc.__class__.__name__}: {exc}"


class _Consumer:
    """One source's loop. Its state is written to the source row; `say` tells people of changes."""

    def __init__(self, source, stop, say):
        self.source = source
        self.stop = stop
        self.say = say
        self.state = None
        self.into = source.queue.name
        # Half the prefetch at most: one batch is stored while the next one arrives, and the
        # broker sends no more than `prefetch` unacknowledged deliveries.
        self.batch_limit = max(1, min(source.batch_size, source.prefetch // 2))
        self.pending = None  # (batch, future): the batch being stored, not yet acknowledged
        self.parking = source.broker_queue + REFUSED_SUFFIX
        # Failed attempts since a batch last went through: how long the next backoff is.
        self.failures = 0

    def run(self):
        self._report(STARTING)
        while not self.stop.is_set():
            broker = None
            try:
                broker = _broker(self.source)
                self._report(CONNECTING)
                self._consume(broker)
            except Exception as exc:
                where = broker.where if broker else f"source {self.source.name}"
                error = f"{where}: {_why(exc, self.source)}"
                error = broker.scrub(error) if broker else error
                if isinstance(exc, SourceDown | amqp.AMQPError | OSError):
                    log.warning("%s", error)
                else:
                    log.error("source %s failed: %s", self.source.name, error, exc_info=True)
                    # A database that went away leaves the connection unusable: start afresh.
                    connection.close()
                if self.stop.is_set():
                    break
                delay = backoff_seconds(self.failures)
                self.failures += 1
                self._report(DOWN, error, retry_at=timezone.now() + timedelta(seconds=delay))
                self._wait(delay)
        self._report(STOPPED)

    def _wait(self, seconds):
        """Sleep on the stop event, beating the heart meanwhile."""
        deadline = time.monotonic() + seconds
        while not self.stop.wait(min(HEARTBEAT_SECONDS, max(0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                return
            self._db(source_heartbeat, name=self.source.name)

    def _report(self, state, error="", retry_at=None):
        self._db(
            source_state_set, name=self.source.name, state=state, error=error, retry_at=retry_at
        )
        if state != self.state:
            line = f"{self.source.name}: {state}"
            if error:
                line += f" ({error})"
            if retry_at is not None:
                line += f"; retrying at {retry_at:%H:%M:%S}"
            self.say(line)
        self.state = state

    def _db(self, write, **kwargs):
        # Bookkeeping must not kill the consumer: a database that is away is retried next time.
        try:
            write(**kwargs)
        except DatabaseError as exc:
            log.warning("source %s: its state could not be recorded: %s", self.source.name, exc)
        finally:
            # Back to the pool until the next write, seconds away: a source's thread holds no
            # connection while it waits on the broker, so any number of sources share the
            # process's DB_POOL_MAX.
            connection.close()

    def _consume(self, broker):
        conn = pika.BlockingConnection(broker.parameters)
        # Storing a batch (lake files, the database) runs beside taking the next one from the
        # broker: most of it waits on disk and the database, and pika's decoding needs the CPU.
        storer = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"store-{self.source.name}")
        try:
            channel = conn.channel()
            channel.confirm_delivery()
            channel.queue_declare(self.source.broker_queue, passive=True)
            channel.basic_qos(prefetch_count=self.source.prefetch)
            self._report(CONSUMING)
            self._drain(channel, storer)
        finally:
            if self.pending is not None:
                # Stored or not, its deliveries are acknowledged only on a channel still open;
                # otherwise the broker delivers them again and ingest stores them once.
                with contextlib.suppress(Exception):
                    self.pending[1].result()
                self.pending = None
            storer.shutdown()
            if conn.is_open:
                with contextlib.suppress(amqp.AMQPError):
                    conn.close()

    def _drain(self, channel, storer):
        """Batches until stopped: `batch_limit` deliveries (or BATCH_BYTES), or what came before
        `batch_seconds` of quiet. What a stop interrupts is stored before the channel closes."""
        batch, size = [], 0
        parked_declared = False
        last_delivery = first_delivery = last_beat = time.monotonic()
        max_age = self.source.batch_seconds * BATCH_AGE_FACTOR
        deliveries = channel.consume(self.source.broker_queue, inactivity_timeout=POLL_SECONDS)
        for method, properties, body in deliveries:
            now = time.monotonic()
            if method is not None:
                if not batch:
                    first_delivery = now
                batch.append((method.delivery_tag, properties, body))
                size += len(body)
                last_delivery = now
            due = (
                len(batch) >= self.batch_limit
                or size >= BATCH_BYTES
                or now - last_delivery >= self.source.batch_seconds
                or now - first_delivery >= max_age
                or self.stop.is_set()
            )
            if self.pending is not None and (self.pending[1].done() or (batch and due)):
                parked_declared = self._finish(channel, parked_declared)
                last_beat = time.monotonic()
            if batch and due:
                self.pending = (batch, storer.submit(self._store, batch))
                batch, size = [], 0
            if self.stop.is_set():
                if self.pending is not None:
                    self._finish(channel, parked_declared)
                channel.cancel()
                return
            if now - last_beat >= HEARTBEAT_SECONDS:
                self._db(source_heartbeat, name=self.source.name)
                last_beat = now
                self.failures = 0
        # The generator ends when the broker cancels the consumer: its queue was deleted.
        raise SourceDown(f"the broker cancelled the consumer of queue {self.source.broker_queue!r}")

    def _store(self, batch):
        """In the storing thread: map and ingest a batch; (ingest result, refusals by index)."""
        records, unreadable = [], {}
        for index, (_, properties, body) in enumerate(batch):
            try:
                records.append(self._record(properties, body))
            except Exception as exc:
                # A property pika decoded but Antidote cannot represent: set it aside like a
                # refusal, since redelivering it would fail the same way.
                unreadable[index] = f"could not be read: {exc.__class__.__name__}: {exc}"
                records.append(None)
        positions = [i for i, r in enumerate(records) if r is not None]
        try:
            result = messages_ingest(
                records=[records[i] for i in positions],
                source=f"{KIND}:{self.source.name}",
                errors_kept=None,
            )
        finally:
            # This thread's, back to the pool between batches (and a broken one never reused).
            connection.close()
        refused = dict(unreadable)
        for error in result.errors:
            refused[positions[error.position]] = error.message
        return result, refused

    def _finish(self, channel, parked_declared):
        """In the consuming thread, once the pending batch is stored: set its refusals aside,
        then acknowledge it. A batch that could not be stored raises here: the consumer
        reconnects, and the broker delivers the batch again."""
        batch, future = self.pending
        self.pending = None
        result, refused = future.result()
        for index, reason in sorted(refused.items()):
            _, properties, body = batch[index]
            if not parked_declared:
                channel.queue_declare(self.parking, durable=True)
                parked_declared = True
            self._park(channel, properties, body, reason)
        channel.basic_ack(delivery_tag=batch[-1][0], multiple=True)
        # A batch went all the way through: the next failure starts the backoff afresh. (Not on
        # merely connecting: a batch that fails each time would reconnect every second.)
        self.failures = 0
        error = None
        if refused:
            latest = refused[max(refused)]
            error = f"{len(refused)} message(s) set aside in {self.parking}; latest: {latest}"
        self._db(
            source_drained,
            name=self.source.name,
            accepted=result.accepted + result.duplicates,
            refused=len(refused),
            error=error,
        )
        return parked_declared

    def _record(self, properties, body):
        return record_of(
            body=body,
            properties=properties,
            drained_from=self.source.broker_queue,
            into=self.into,
            source=self.source.name,
        )

    def _park(self, channel, properties, body, reason):
        """Publish one refused message to the parking queue and wait for the broker's confirm
        (the channel is in confirm mode: pika raises if the broker nacks or cannot route it)."""
        values = {name: getattr(properties, name, None) for name in PROPERTY_NAMES}
        headers = dict(values.pop("headers") or {})
        headers[REFUSED_REASON_HEADER] = reason[:REASON_LIMIT]
        user_id = values.pop("user_id")
        if user_id is not None:
            # RabbitMQ refuses a publish whose user_id is not the connection's own user.
            headers[REFUSED_USER_HEADER] = user_id
        channel.basic_publish(
            exchange="",
            routing_key=self.parking,
            body=body,
            properties=pika.BasicProperties(headers=headers, **values),
            mandatory=True,
        )
        log.warning(
            "source %s: a message was refused and set aside in %s: %s",
            self.source.name,
            self.parking,
            reason,
        )


def source_consume(source, *, stop, say=log.info):
    """Drain one BrokerSource until `stop` (a threading.Event) is set, reconnecting with backoff
    whenever the broker is away. `say` is called with a line per state change."""
    _Consumer(source, stop, say).run()


# --- Every source: one thread each ---------------------------------------------------------------


_CONFIG_FIELDS = (
    "url_env",
    "broker_queue",
    "queue_id",
    "prefetch",
    "batch_size",
    "batch_seconds",
)


def _config(source):
    return tuple(getattr(source, name) for name in _CONFIG_FIELDS)


def _sources(only):
    sources = BrokerSource.objects.filter(kind=KIND, enabled=True).select_related("queue")
    if only:
        sources = sources.filter(name__in=only)
    return {s.name: s for s in sources}


@dataclass
class _Running:
    thread: threading.Thread
    stop: threading.Event
    config: tuple


def _start(source, say):
    stop = threading.Event()

    def run():
        try:
            source_consume(source, stop=stop, say=say)
        finally:
            connection.close()

    thread = threading.Thread(target=run, name=f"source-{source.name}", daemon=True)
    thread.start()
    return _Running(thread, stop, _config(source))


def consumers_run(*, stop, only=None, say=log.info, every=SOURCES_SECONDS):
    """Run a consumer thread per enabled RabbitMQ source (or those named in `only`) until `stop`
    is set, reading the sources again every `every` seconds: a new source is started, a disabled
    or removed one stopped, a changed one restarted. Returns when every thread has ended."""
    running = {}
    waiting_said = False
    try:
        while not stop.is_set():
            try:
                sources = _sources(only)
            except DatabaseError as exc:
                say(f"the sources cannot be read: {exc}; trying again in {every:.0f} s")
                stop.wait(every)
                continue
            finally:
                # Not held while the sources run: this thread reads them every `every` seconds.
                connection.close()
            for name, consumer in list(running.items()):
                source = sources.get(name)
                ended = not consumer.thread.is_alive()
                if ended or source is None or _config(source) != consumer.config:
                    consumer.stop.set()
                    consumer.thread.join()
                    del running[name]
            for name, source in sources.items():
                if name not in running:
                    running[name] = _start(source, say)
            if not running and not waiting_said:
                which = f" named {', '.join(only)}" if only else ""
                say(f"no enabled RabbitMQ source{which}; checking again every {every:.0f} s")
            waiting_said = not running
            stop.wait(every)
    finally:
        for consumer in running.values():
            consumer.stop.set()
        for consumer in running.values():
            consumer.thread.join()
