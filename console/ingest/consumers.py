"""The consumer of every broker source: drains each source's dead letters into Antidote, for as
long as it runs, whatever its broker.

One thread per enabled source (`consumers_run`), each a loop of connect, drain, back off
(`source_consume`); the broker's protocol is its connector's (workers.brokers.base). A batch
of deliveries is stored first (`messages_ingest` commits to the lake and the DB before it
returns) and acknowledged after, so a consumer killed at any point loses nothing: the broker
hands over again what was not acknowledged, and ingest, being idempotent, stores each message
once. What ingest refuses, and what cannot be read, is parked on the broker with its reason
before it is acknowledged: never dropped, never redelivered for ever.

The broker's URL is read from the environment variable the source names and goes no further
than its connector: errors name where the broker is, never the URL or its password.
"""

import contextlib
import contextvars
import logging
import os
import random
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta

from django.db import DatabaseError, connection
from django.utils import timezone

from console.envnames import broker_variable_refusal
from console.ingest.services import messages_ingest
from console.queues.models import CONSUMER_STATES, BrokerSource
from console.queues.sources import (
    source_connector_config,
    source_drained,
    source_heartbeat,
    source_state_set,
)
from workers.brokers.base import SourceDown
from workers.brokers.registry import KIND_TITLES, connector_loaded
from workers.logcontext import log_context
from workers.redaction import scrubbed, url_secrets

log = logging.getLogger(__name__)

BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0
HEARTBEAT_SECONDS = 5.0
SOURCES_SECONDS = 30.0
# How long a fetch waits at most: the longest a stop waits for a quiet source.
POLL_SECONDS = 0.5
# A batch is stored at this many bytes of bodies whatever its count: a thousand bodies of the
# largest size allowed would not fit in memory.
BATCH_BYTES = 64 * 1024 * 1024
# A steady trickle never leaves `batch_seconds` of quiet: a batch is stored once its first
# delivery has waited this many times `batch_seconds`.
BATCH_AGE_FACTOR = 5

STARTING, CONNECTING, CONSUMING, DOWN, STOPPED = CONSUMER_STATES


def backoff_seconds(attempt, *, rand=random.random):
    """The wait before reconnection `attempt` (from 0): 1 s doubling up to 60 s, less up to a
    quarter at random so that sources cut off together do not all come back at once."""
    delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2**attempt)
    return delay * (1 - rand() / 4)


def source_config(source):
    """What a source's connector is given: the row's settings and the URL from its variable.
    SourceDown when the variable is not set."""
    refusal = broker_variable_refusal(source.url_env)
    if refusal:
        # A row saved before the rule (console.envnames): never connect with the product's own.
        raise SourceDown(f"url_env is refused: {refusal}")
    url = os.environ.get(source.url_env)
    if not url:
        raise SourceDown(f"the environment variable {source.url_env} (the broker's URL) is not set")
    return source_connector_config(source, url=url)


class _Consumer:
    """One source's loop. Its state is written to the source row; `say` tells people of changes."""

    def __init__(self, source, stop, say):
        self.source = source
        self.stop = stop
        self.say = say
        self.state = None
        # Half the prefetch at most: one batch is stored while the next one arrives, and the
        # broker sends no more than `prefetch` unacknowledged deliveries.
        self.batch_limit = max(1, min(source.batch_size, source.prefetch // 2))
        self.pending = None  # (batch, future): the batch being stored, not yet acknowledged
        # Failed attempts since a batch last went through: how long the next backoff is.
        self.failures = 0
        self.connector = None
        self.config = None
        self.link = None

    def run(self):
        self._report(STARTING)
        while not self.stop.is_set():
            where, secrets = f"source {self.source.name}", ()
            try:
                self.connector = connector_loaded(self.source.kind)
                self.config = source_config(self.source)
                secrets = url_secrets(self.config.url, path=False)
                where_of = getattr(self.connector, "where", None)
                if where_of is not None:
                    where = where_of(self.config)
                self._report(CONNECTING)
                self._consume()
            except Exception as exc:
                if self.link is not None:
                    where, secrets = self.link.where, (*secrets, *self.link.secrets)
                    self.link = None
                error = scrubbed(f"{where}: {self._why(exc)}", secrets)
                errors = (SourceDown, OSError, *getattr(self.connector, "errors", ()))
                if isinstance(exc, errors):
                    log.warning("%s", error)
                else:
                    # The traceback as text, scrubbed too: an exception's message inside it may
                    # quote the URL, password and all.
                    trace = scrubbed("".join(traceback.format_exception(exc)), secrets)
                    log.error("source %s failed: %s\n%s", self.source.name, error, trace)
                    # A database that went away leaves the connection unusable: start afresh.
                    connection.close()
                if self.stop.is_set():
                    break
                delay = backoff_seconds(self.failures)
                self.failures += 1
                self._report(DOWN, error, retry_at=timezone.now() + timedelta(seconds=delay))
                self._wait(delay)
        self._report(STOPPED)

    def _why(self, exc):
        if isinstance(exc, SourceDown) or self.connector is None or self.config is None:
            return str(exc)
        try:
            return self.connector.why(exc, self.config)
        except Exception:
            # A connector that cannot say still leaves a sentence on the page.
            return f"{exc.__class__.__name__}: {exc}"

    def _wait(self, seconds):
        """Sleep on the stop event, beating the heart meanwhile."""
        deadline = time.monotonic() + seconds
        while not self.stop.wait(min(HEARTBEAT_SECONDS, max(0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                return
            self._db(source_heartbeat, name=self.source.name)

    def _report(self, state, error="", retry_at=None, where=None):
        self._db(
            source_state_set,
            name=self.source.name,
            state=state,
            error=error,
            retry_at=retry_at,
            where=where,
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

    def _lag(self):
        """The link's lag, or None when it cannot say now: a broken link fails the next fetch,
        and a count already drained is recorded whatever the lag."""
        try:
            return self.link.lag()
        except Exception as exc:
            log.warning("source %s: its lag could not be read: %r", self.source.name, exc)
            return None

    def _consume(self):
        self.link = self.connector.open(self.config)
        # Storing a batch (lake files, the database) runs beside taking the next one from the
        # broker: most of it waits on disk and the database, and decoding needs the CPU.
        storer = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"store-{self.source.name}")
        try:
            self._report(CONSUMING, where=scrubbed(self.link.where, self.link.secrets))
            self._db(source_heartbeat, name=self.source.name, lag=self._lag())
            self._drain(storer)
        finally:
            if self.pending is not None:
                # Stored or not, its deliveries are acknowledged only on a link still open;
                # otherwise the broker delivers them again and ingest stores them once.
                with contextlib.suppress(Exception):
                    self.pending[1].result()
                self.pending = None
            storer.shutdown()
            self.link.close()
        self.link = None

    def _drain(self, storer):
        """Batches until stopped: `batch_limit` deliveries (or BATCH_BYTES), or what came before
        `batch_seconds` of quiet, or what waited `BATCH_AGE_FACTOR` times that. What a stop
        interrupts is stored and acknowledged before the link closes."""
        batch, size = [], 0
        last_delivery = first_delivery = last_beat = time.monotonic()
        max_age = self.source.batch_seconds * BATCH_AGE_FACTOR
        while True:
            # Once per fetch: a stop closes the batch in hand, and nothing more is fetched.
            stopping = self.stop.is_set()
            limit = self.batch_limit - len(batch)
            fetched = [] if stopping else self.link.fetch(limit=limit, timeout=POLL_SECONDS)
            # One at a time, as they came: a batch closes at the delivery that fills it, and the
            # rest of what was fetched opens the next one.
            for delivery in fetched or [None]:
                now = time.monotonic()
                if delivery is not None:
                    if not batch:
                        first_delivery = now
                    batch.append(delivery)
                    size += delivery.size or len(delivery.body)
                    last_delivery = now
                due = (
                    len(batch) >= self.batch_limit
                    or size >= BATCH_BYTES
                    or now - last_delivery >= self.source.batch_seconds
                    or now - first_delivery >= max_age
                    or stopping
                )
                if batch and due:
                    if self.pending is not None:
                        # Batches are acknowledged in order: the one before goes first.
                        self._finish()
                        last_beat = time.monotonic()
                    # In this thread's log context: the source and its queue.
                    stored = storer.submit(contextvars.copy_context().run, self._store, batch)
                    self.pending = (batch, stored)
                    batch, size = [], 0
            # Once a fetch, not once a delivery (a future's `done` takes a lock): a stored batch
            # is acknowledged as soon as the consumer looks up from the broker.
            if self.pending is not None and self.pending[1].done():
                self._finish()
                last_beat = time.monotonic()
            if stopping:
                if self.pending is not None:
                    self._finish()
                return
            if now - last_beat >= HEARTBEAT_SECONDS:
                self._db(source_heartbeat, name=self.source.name, lag=self._lag())
                last_beat = now
                self.failures = 0

    def _store(self, batch):
        """In the storing thread: map and ingest a batch; (ingest result, refusals by index)."""
        records, unreadable = [], {}
        for index, delivery in enumerate(batch):
            try:
                records.append(self.link.record(delivery))
            except Exception as exc:
                # What the client decoded but Antidote cannot represent: set aside like a
                # refusal, since delivering it again would fail the same way.
                unreadable[index] = f"could not be read: {exc.__class__.__name__}: {exc}"
                records.append(None)
        positions = [i for i, r in enumerate(records) if r is not None]
        try:
            result = messages_ingest(
                records=[records[i] for i in positions],
                source=f"{self.source.kind}:{self.source.name}",
                errors_kept=None,
                from_source=True,
            )
        finally:
            # This thread's, back to the pool between batches (and a broken one never reused).
            connection.close()
        refused = dict(unreadable)
        for error in result.errors:
            refused[positions[error.position]] = error.message
        return result, refused

    def _finish(self):
        """In the consuming thread, once the pending batch is stored: park its refusals, then
        acknowledge it. A batch that could not be stored raises here: the consumer reconnects,
        and the broker delivers the batch again."""
        batch, future = self.pending
        self.pending = None
        result, refused = future.result()
        parking = None
        for index, reason in sorted(refused.items()):
            self.link.park(batch[index], reason)
            parking = parking or self.connector.parking_name(self.config)
            log.warning(
                "source %s: a message was refused and set aside in %s: %s",
                self.source.name,
                parking,
                reason,
            )
        self.link.ack(batch)
        # A batch went all the way through: the next failure starts the backoff afresh. (Not on
        # merely connecting: a batch that fails each time would reconnect every second.)
        self.failures = 0
        error = None
        if refused:
            latest = refused[max(refused)]
            error = f"{len(refused)} message(s) set aside in {parking}; latest: {latest}"
        self._db(
            source_drained,
            name=self.source.name,
            accepted=result.accepted + result.duplicates,
            refused=len(refused),
            error=error,
            lag=self._lag(),
        )


def source_consume(source, *, stop, say=log.info):
    """Drain one BrokerSource until `stop` (a threading.Event) is set, reconnecting with backoff
    whenever the broker is away. `say` is called with a line per state change."""
    with log_context(source=source.name, queue=source.queue.name):
        _Consumer(source, stop, say).run()


# --- Every source: one thread each ---------------------------------------------------------------


_CONFIG_FIELDS = (
    "kind",
    "url_env",
    "broker_queue",
    "queue_id",
    "prefetch",
    "batch_size",
    "batch_seconds",
    "options",
)


def _config(source):
    return tuple(repr(getattr(source, name)) for name in _CONFIG_FIELDS)


def _sources(only, kinds):
    sources = BrokerSource.objects.filter(enabled=True).select_related("queue")
    if kinds:
        sources = sources.filter(kind__in=kinds)
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


def _which(only, kinds):
    """'RabbitMQ source named a, b' and the like: what a consumer with no source waits for."""
    titles = " or ".join(KIND_TITLES.get(k, k) for k in kinds or ())
    which = f"{titles} source" if titles else "source"
    if only:
        which += f" named {', '.join(only)}"
    return which


def consumers_run(*, stop, only=None, kinds=None, say=log.info, every=SOURCES_SECONDS):
    """Run a consumer thread per enabled source of `kinds` (every kind when None; or those named
    in `only`) until `stop` is set, reading the sources again every `every` seconds: a new source
    is started, a disabled or removed one stopped, a changed one restarted. Returns when every
    thread has ended."""
    running = {}
    waiting_said = False
    try:
        while not stop.is_set():
            try:
                sources = _sources(only, kinds)
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
                say(f"no enabled {_which(only, kinds)}; checking again every {every:.0f} s")
            waiting_said = not running
            stop.wait(every)
    finally:
        for consumer in running.values():
            consumer.stop.set()
        for consumer in running.values():
            consumer.thread.join()
