"""Redis Streams: a source that drains poison entries from consumer groups, and the handler that
redrives messages to a stream (`workers.brokers.redis_streams.publisher`).

Redis has no dead-letter queue. A consumer that fails on an entry does not acknowledge it, so
the entry stays in its group's pending entries list (PEL), and each delivery of it (XREADGROUP of
the consumer's own history, or a claim by another consumer) adds one to its delivery counter. The
documented pattern is to claim such an entry once its counter is high enough, move it elsewhere
and tell a person: this source does that for Antidote.

The source, for the stream `broker_queue` and each of its groups (`group` or `groups`):

1. lists the group's pending entries idle for at least `min_idle_ms` (XPENDING with IDLE) and
   keeps those delivered at least `min_deliveries` times. XAUTOCLAIM would claim by idle time
   alone, taking entries that merely wait for a slow consumer;
2. claims them for Antidote's own consumer (`consumer`, "antidote") with XCLAIM, giving the same
   minimum idle time: an entry that a consumer was handed again since it was listed is not idle
   any more and is not taken (claim, then act only on what was won). A claim returns the
   entries' fields and adds one to their delivery counter; that counter is the record of how
   many times the group's own consumers got an entry, so the claim sets it back to what
   XPENDING listed (RETRYCOUNT, one XCLAIM per count). It stays theirs: after a restart, or to
   anyone running XPENDING, it says how often the application failed, not how often Antidote
   looked. (JUSTID would leave the counter alone too, but returns no fields: an XRANGE per
   entry, which costs more than the claim);
3. hands the entries to the loop, which stores them (the lake commit), then acknowledges them
   here: XACK, and XDEL when the source says `delete: true` (XDEL removes the entry for every
   group of the stream).

An entry claimed and not yet acknowledged stays in the PEL under Antidote's consumer. A link
first reads those (XPENDING for its own consumer, then XRANGE): a consumer killed between claim
and acknowledgement loses nothing, and the ids being stable (redis_message.message_id_of) ingest
stores nothing twice. Two links with the same consumer name would share that list: give each
Antidote that drains one group a name of its own.

What cannot become a message (see redis_message: an entry with no body field whose fields are
not all text, an entry deleted from the stream while it was Antidote's) is parked: appended to
`<stream>:antidote-refused` with its fields and `antidote-refused-reason`, then acknowledged.

The sink appends (XADD) the message to its stream with its fields as received and the Antidote
message id in a field (`id_field`), so a consumer can drop a copy it has seen. Where it goes is
the request's own target (key "stream"), else the queue's `stream` option, else the stream the
entry was drained from. Appends are pipelined: each call queues an XADD and returns a Deferred,
and the pipeline is sent every `window` calls and when the engine settles the batch. An append
whose reply was lost (connection broken while the pipeline was out) is a transient failure and is
sent again: only such an append can reach the stream twice, and the id field says so.

Processes: the engine builds the handler in one process and forks a child per batch to call it,
so a connection is opened lazily by the process that publishes, never inherited. URLs are read
from the environment when connecting and never kept; errors name host:port/db only.
"""

import contextlib
import os
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from workers.brokers.connector import (
    KIND_TITLES,
    ConnectFailures,
    Delivery,
    SourceConfig,
    SourceDown,
    redrive_destination,
)
from workers.brokers.redis_message import (
    STREAM_HEADER,
    UNKNOWN_CONSUMER,
    EntryMalformed,
    FieldsUnreadable,
    fields_to_publish,
    record_of,
)
from workers.engine.handlers import Deferred, PermanentFailure, configurable
from workers.redaction import scrubbed, url_secrets

KIND = "redis"
DEFAULT_URL_ENV = "ANTIDOTE_REDIS_STREAMS_URL"
REFUSED_SUFFIX = ":antidote-refused"
REFUSED_REASON_FIELD = b"antidote-refused-reason"
REFUSED_ENTRY_FIELD = b"antidote-refused-entry-id"
REFUSED_GROUP_FIELD = b"antidote-refused-group"
REASON_LIMIT = 1000
DEFAULTS = {
    "consumer": "antidote",
    "min_deliveries": 3,
    # A minute without a delivery: a consumer still working on its third try is not robbed.
    "min_idle_ms": 60_000,
    "delete": False,
    "body_field": "body",
}
OPTION_NAMES = {"group", "groups", *DEFAULTS}
CONNECT_TIMEOUT = 10.0
# Every command's reply comes within this, or the connection is taken for lost.
SOCKET_TIMEOUT = 30.0
# How often an idle source asks for new poison entries: Redis says nothing when a counter grows.
POLL_SECONDS = 0.5
# A fetch lists at most this many pending entries of a group before answering: a group with a
# long backlog of healthy pending entries is read a slice per fetch, from where the last ended.
SCAN_PAGE = 1000
SCAN_BUDGET = 10_000
# lag() reads every pending entry of a group up to this many; beyond, it says it does not know.
LAG_EXACT_LIMIT = 10_000
LAG_SECONDS = 5.0


# --- Connecting --------------------------------------------------------------------------------


def _where(url):
    """host:port/db of a Redis URL, for messages: never the URL (it may hold the password)."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme == "unix":
            return f"unix:{parts.path}"
        host, port = parts.hostname or "localhost", parts.port or 6379
    except ValueError:
        return "an unreadable URL"
    db = parts.path.strip("/") or "0"
    return f"{host}:{port}/{db}"


def _url_check(url, url_env):
    """SourceDown unless `url` is a Redis URL redis-py reads; its message never quotes it."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        raise SourceDown(f"the URL in {url_env} cannot be read") from None
    if scheme not in ("redis", "rediss", "unix"):
        raise SourceDown(
            f"the URL in {url_env} must start with redis://, rediss:// or unix:// "
            "(redis://user:password@host:port/db)"
        )


def _client(url, url_env, *, timeout=SOCKET_TIMEOUT):
    """A client for one thread, without redis-py's own retries: a command that failed is retried
    by the caller, who knows whether doing it again is safe."""
    _url_check(url, url_env)
    try:
        client = redis.Redis.from_url(
            url,
            socket_connect_timeout=CONNECT_TIMEOUT,
            socket_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
            client_name=f"antidote-{os.getpid()}",
        )
    except (ValueError, TypeError):
        # The parser's message may quote the URL, password and all.
        raise SourceDown(f"the URL in {url_env} cannot be read") from None
    # Replies as Redis sends them: redis-py would turn an entry's fields into a dict, losing a
    # name given twice and the order.
    for command in ("XPENDING", "XCLAIM", "XRANGE"):
        client.set_response_callback(command, _raw)
    return client


def _raw(response, **options):
    return response


def _secrets(url):
    # The URL, its user and password, its query (redis-py reads ?password= there too).
    return url_secrets(url, path=False)


def _text(value):
    return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else str(value)


# --- The source --------------------------------------------------------------------------------


@dataclass
class _Entry:
    """What a delivery carries: the entry as read, and who had it before Antidote."""

    group: str
    entry_id: str
    fields: list | None  # [(name, value), ...]; None: deleted from the stream
    consumer: str
    deliveries: int
    idle_ms: int


def _id_order(entry_id):
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def _pairs(flat):
    # Slices and zip, not an index loop: this runs for every entry a source claims. An odd last
    # item (a name without its value) is left out, as it always was.
    return list(zip(flat[0::2], flat[1::2], strict=False))


class RedisStreamsLink:
    """An open connection draining one stream's groups (see the module docstring)."""

    def __init__(self, config, client, options):
        self.config = config
        self.client = client
        self.stream = config.drained
        self.parking = config.drained + REFUSED_SUFFIX
        self.groups = options["groups"]
        self.consumer = options["consumer"]
        self.min_deliveries = options["min_deliveries"]
        self.min_idle_ms = options["min_idle_ms"]
        self.delete = options["delete"]
        self.body_field = options["body_field"]
        self.where = CONNECTOR.where(config)
        self.secrets = _secrets(config.url)
        # Per group, where the next listing of Antidote's own pending entries starts; a group
        # leaves once they have all been handed out again after a restart.
        self.recovering = dict.fromkeys(self.groups, "-")
        # Per group, where the next listing of the PEL starts: a long one is read in slices.
        self.cursors = dict.fromkeys(self.groups, "-")
        self.turn = 0
        self.lag_seen = None
        self.lag_asked = None

    def fetch(self, *, limit, timeout):
        deadline = time.monotonic() + timeout
        while True:
            # Antidote's own unacknowledged entries first, all of them, before any claim: a claim
            # puts more entries in that list, which the listing would hand out twice.
            deliveries = self._recover(limit) if self.recovering else []
            if not deliveries and not self.recovering:
                deliveries = self._claim(limit)
            remaining = deadline - time.monotonic()
            if deliveries or remaining <= 0:
                return deliveries
            time.sleep(min(POLL_SECONDS, remaining))

    def _recover(self, limit):
        for group, start in list(self.recovering.items()):
            rows = self.client.execute_command(
                "XPENDING", self.stream, group, start, "+", limit, self.consumer
            )
            if not rows:
                del self.recovering[group]
                continue
            self.recovering[group] = "(" + _text(rows[-1][0])
            ids = [_text(row[0]) for row in rows]
            pipe = self.client.pipeline(transaction=False)
            for entry_id in ids:
                pipe.execute_command("XRANGE", self.stream, entry_id, entry_id)
            found = pipe.execute()
            # The counter is still the group's own consumers' (claims keep it, RETRYCOUNT); who
            # had the entry before Antidote is not written anywhere.
            return [
                self._delivery(group, row, entries[0][1] if entries else None, UNKNOWN_CONSUMER)
                for row, entries in zip(rows, found, strict=True)
            ]
        return []

    def _claim(self, limit):
        for _ in range(len(self.groups)):
            group = self.groups[self.turn % len(self.groups)]
            self.turn += 1
            candidates = self._candidates(group, limit)
            if not candidates:
                continue
            # One XCLAIM per delivery count, with RETRYCOUNT set to it: a claim returns the
            # entries' fields and would add one to their counter, which is the record of how
            # many times the group's own consumers got them (JUSTID leaves the counter alone but
            # returns no fields, which would cost an XRANGE per entry).
            by_count = {}
            for row in candidates:
                by_count.setdefault(row[3], []).append(row)
            pipe = self.client.pipeline(transaction=False)
            for count, rows in by_count.items():
                ids = [_text(row[0]) for row in rows]
                pipe.execute_command(
                    "XCLAIM",
                    self.stream,
                    group,
                    self.consumer,
                    self.min_idle_ms,
                    *ids,
                    "RETRYCOUNT",
                    count,
                )
            listed = {_text(row[0]): row for row in candidates}
            deliveries = []
            for claimed in pipe.execute():
                # Only what was won comes back: an entry handed out again since it was listed
                # is not idle any more. (Redis before 7 also returns a deleted one, as nil.)
                for entry in claimed:
                    if entry is None:
                        continue
                    entry_id, flat = _text(entry[0]), entry[1]
                    deliveries.append(self._delivery(group, listed[entry_id], flat, None))
            if deliveries:
                if len(by_count) > 1:  # one claim comes back in the order it was listed
                    deliveries.sort(key=lambda d: _id_order(d.raw.entry_id))
                return deliveries
        return []

    def _candidates(self, group, limit):
        """Up to `limit` pending entries of `group` that are due: idle long enough, delivered
        often enough, not Antidote's. Continues from where the last listing stopped."""
        found, scanned = [], 0
        start = self.cursors[group]
        # A listing that began mid-list may go round once: entries before its start (claimed
        # from, or made due, since) are as due as any, and finding none at the end is no reason
        # to wait a poll before looking there.
        may_wrap = start != "-"
        # A page no longer than what is asked for: most of a page past it would be read for
        # nothing when most pending entries are due (a backlog of them, after an outage).
        page = min(SCAN_PAGE, max(limit, 100))
        while len(found) < limit and scanned < SCAN_BUDGET:
            rows = self.client.execute_command(
                "XPENDING", self.stream, group, "IDLE", self.min_idle_ms, start, "+", page
            )
            scanned += len(rows)
            for row in rows:
                if row[3] >= self.min_deliveries and _text(row[1]) != self.consumer:
                    found.append(row)
                    if len(found) == limit:
                        # The next listing starts after the last one taken.
                        self.cursors[group] = "(" + _text(row[0])
                        return found
            if len(rows) < page:
                # The end of the list: the next listing starts again from the beginning.
                self.cursors[group] = "-"
                if found or not may_wrap:
                    return found
                start, may_wrap = "-", False
                continue
            start = "(" + _text(rows[-1][0])
            self.cursors[group] = start
        return found

    def _delivery(self, group, row, flat, consumer):
        """The Delivery of an entry listed by XPENDING as `row`, with its fields `flat`; its
        last consumer is `consumer`, or the one `row` names when None."""
        fields = None if flat is None else _pairs(flat)
        size = sum(map(len, flat[: len(flat) // 2 * 2])) if fields else 0
        if consumer is None:
            consumer = _text(row[1])
        entry = _Entry(
            group=group,
            entry_id=_text(row[0]),
            fields=fields,
            consumer=consumer,
            deliveries=row[3],
            idle_ms=row[2],
        )
        return Delivery(token=(group, entry.entry_id), body=b"", raw=entry, size=size)

    def record(self, delivery):
        entry = delivery.raw
        if entry.fields is None:
            raise EntryMalformed(
                f"entry {entry.entry_id} was deleted from the stream while it waited in group "
                f"'{entry.group}': there is nothing left of it to keep"
            )
        return record_of(
            stream=self.stream,
            entry_id=entry.entry_id,
            fields=entry.fields,
            group=entry.group,
            consumer=entry.consumer,
            deliveries=entry.deliveries,
            idle_ms=entry.idle_ms,
            body_field=self.body_field,
            into=self.config.into,
            source=self.config.name,
        )

    def park(self, delivery, reason):
        entry = delivery.raw
        flat = []
        for name, value in entry.fields or ():
            flat += (name, value)
        flat += (
            REFUSED_REASON_FIELD,
            reason[:REASON_LIMIT],
            REFUSED_ENTRY_FIELD,
            entry.entry_id,
            REFUSED_GROUP_FIELD,
            entry.group,
        )
        # XADD answers once the entry is in the stream: that is the confirm the loop waits for.
        self.client.execute_command("XADD", self.parking, "*", *flat)

    def ack(self, deliveries):
        if not deliveries:
            return
        by_group = {}
        for delivery in deliveries:
            group, entry_id = delivery.token
            by_group.setdefault(group, []).append(entry_id)
        # One MULTI: an entry is never deleted without its acknowledgement, nor the reverse.
        pipe = self.client.pipeline(transaction=True)
        for group, ids in by_group.items():
            pipe.execute_command("XACK", self.stream, group, *ids)
        if self.delete:
            ids = {entry_id for ids in by_group.values() for entry_id in ids}
            pipe.execute_command("XDEL", self.stream, *sorted(ids))
        pipe.execute()

    def lag(self):
        """Pending entries delivered at least `min_deliveries` times to the groups' consumers,
        idle or not yet, and not in Antidote's hands; None when a group has more than
        LAG_EXACT_LIMIT pending entries to count. Asked of Redis every LAG_SECONDS at most."""
        now = time.monotonic()
        if self.lag_asked is None or now - self.lag_asked >= LAG_SECONDS:
            self.lag_seen, self.lag_asked = self._lag_count(), now
        return self.lag_seen

    def _lag_count(self):
        total = 0
        for group in self.groups:
            summary = self.client.execute_command("XPENDING", self.stream, group)
            pending = summary[0] if summary else 0
            if pending > LAG_EXACT_LIMIT:
                return None
            if not pending:
                continue
            rows = self.client.execute_command(
                "XPENDING", self.stream, group, "-", "+", LAG_EXACT_LIMIT
            )
            total += sum(
                1
                for row in rows
                if row[3] >= self.min_deliveries and _text(row[1]) != self.consumer
            )
        return total

    def close(self):
        # Closing a connection already gone has nothing left to say.
        with contextlib.suppress(Exception):
            self.client.close()


def _options(options):
    """The options with their defaults, `groups` always a list."""
    values = {**DEFAULTS, **{k: v for k, v in options.items() if k in DEFAULTS}}
    groups = options.get("groups")
    values["groups"] = list(groups) if groups else [options.get("group")]
    return values


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


class RedisStreamsConnector:
    kind = KIND
    title = KIND_TITLES[KIND]
    errors = (redis.RedisError,)
    sink = "workers.brokers.redis_streams.publisher"

    def where(self, config: SourceConfig) -> str:
        _url_check(config.url, config.url_env)
        return f"Redis at {_where(config.url)}, stream '{config.drained}'"

    def open(self, config: SourceConfig):
        errors = self.options_errors(config.options)
        if errors:
            raise SourceDown("; ".join(errors))
        if not config.url:
            raise SourceDown(
                f"the environment variable {config.url_env} (the Redis URL) is not set"
            )
        options = _options(config.options)
        client = _client(config.url, config.url_env)
        try:
            _check_groups(client, config.drained, options["groups"])
        except BaseException:
            client.close()
            raise
        return RedisStreamsLink(config, client, options)

    def why(self, exc, config):
        if isinstance(exc, SourceDown):
            return str(exc)
        if isinstance(exc, redis.AuthenticationError | redis.AuthenticationWrongNumberOfArgsError):
            return f"Redis refused the login (check the user and password in {config.url_env})"
        if isinstance(exc, redis.ResponseError):
            text = str(exc)
            if text.startswith("NOGROUP"):
                return f"a consumer group of stream '{config.drained}' no longer exists: {text}"
            if text.startswith("NOAUTH"):
                return f"Redis asks for a password (put it in the URL in {config.url_env})"
            if text.startswith("NOPERM"):
                return f"Redis refused a command to this user: {text}"
            if text.startswith("WRONGTYPE"):
                return f"key '{config.drained}' (or its parking stream) is not a stream"
            return f"Redis refused a command: {text}"
        if isinstance(exc, redis.TimeoutError):
            return f"Redis did not answer within {SOCKET_TIMEOUT:g} s"
        if isinstance(exc, redis.ConnectionError):
            return f"cannot reach Redis: {exc}"
        if isinstance(exc, OSError):
            return f"cannot reach Redis: {exc.strerror or exc!r}"
        return f"{exc.__class__.__name__}: {exc}"

    def options_errors(self, options):
        if not isinstance(options, dict):
            return ["options must be a mapping"]
        errors = []
        unknown = set(options) - OPTION_NAMES
        if unknown:
            errors.append(
                f"unknown option(s) {', '.join(sorted(map(str, unknown)))}; a Redis source "
                f"takes {', '.join(sorted(OPTION_NAMES))}"
            )
        group, groups = options.get("group"), options.get("groups")
        if (group is None) == (groups is None):
            errors.append("name the consumer group(s) to drain: group, or groups (a list)")
        elif group is not None and not (isinstance(group, str) and group):
            errors.append("group must be a consumer group's name")
        elif groups is not None and not (
            isinstance(groups, list)
            and groups
            and all(isinstance(g, str) and g for g in groups)
            and len(set(groups)) == len(groups)
        ):
            errors.append("groups must be a list of consumer group names, each once")
        consumer = options.get("consumer", DEFAULTS["consumer"])
        if not (isinstance(consumer, str) and consumer):
            errors.append("consumer must be a name (Antidote's consumer in the group)")
        min_deliveries = options.get("min_deliveries", DEFAULTS["min_deliveries"])
        if not _is_int(min_deliveries) or min_deliveries < 1:
            errors.append("min_deliveries must be a whole number of at least 1")
        min_idle = options.get("min_idle_ms", DEFAULTS["min_idle_ms"])
        if not _is_int(min_idle) or min_idle < 0:
            errors.append("min_idle_ms must be a whole number of milliseconds, 0 or more")
        if not isinstance(options.get("delete", False), bool):
            errors.append("delete must be true or false")
        body_field = options.get("body_field", DEFAULTS["body_field"])
        if not (isinstance(body_field, str) and body_field):
            errors.append("body_field must name a field")
        return errors

    def parking_name(self, config):
        return config.drained + REFUSED_SUFFIX


def _check_groups(client, stream, groups):
    try:
        infos = client.xinfo_groups(stream)
    except redis.ResponseError as exc:
        if "no such key" in str(exc).lower():
            raise SourceDown(f"stream '{stream}' does not exist") from None
        if str(exc).startswith("WRONGTYPE"):
            raise SourceDown(f"key '{stream}' is not a stream") from None
        raise
    names = {_text(info["name"]) for info in infos}
    missing = [g for g in groups if g not in names]
    if missing:
        raise SourceDown(
            f"stream '{stream}' has no consumer group {', '.join(repr(g) for g in missing)}"
        )


CONNECTOR = RedisStreamsConnector()


# --- The sink ----------------------------------------------------------------------------------


class RedriveFailed(Exception):
    """An append that did not happen, or whose fate is unknown: transient, the backoff retries."""


class RedriveConnectionFailed(RedriveFailed):
    """No connection to Redis, or it was lost before Redis answered."""


class RedriveRefused(RedriveFailed):
    """Redis answered the XADD with an error (the key is not a stream, out of memory, ...): an
    operator can set that right, so it is tried again."""


class NoRedriveTarget(PermanentFailure):
    """Nothing says which stream the message goes to."""


@configurable
def publisher(
    *,
    url_env=DEFAULT_URL_ENV,
    stream=None,
    id_field="antidote-message-id",
    body_field="body",
    timeout=SOCKET_TIMEOUT,
    window=1000,
):
    """The redrive handler of one queue (see the module docstring). Connects at the first send."""
    if not isinstance(url_env, str) or not url_env:
        raise ValueError("url_env must name an environment variable")
    if stream is not None and not (isinstance(stream, str) and stream):
        raise ValueError("stream must be a stream's key")
    for name, value in (("id_field", id_field), ("body_field", body_field)):
        if not (isinstance(value, str) and value):
            raise ValueError(f"{name} must name a field")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ValueError("timeout must be a number of seconds, more than 0")
    if not _is_int(window) or window < 1:
        raise ValueError("window must be a whole number of at least 1")
    return Redrive(
        url_env=url_env,
        stream=stream,
        id_field=id_field,
        body_field=body_field,
        timeout=float(timeout),
        window=window,
    )


class Redrive:
    def __init__(self, *, url_env, stream, id_field, body_field, timeout, window):
        self.url_env = url_env
        self.stream = stream
        self.id_field = id_field.encode("utf-8")
        self.body_field = body_field
        self.timeout = timeout
        self.window = window
        self._batch = None
        self._failures = ConnectFailures(RedriveConnectionFailed)
        # One object for every Deferred: the engine calls each distinct settle once.
        self._settle = self.settle

    def __call__(self, message):
        headers = message.headers
        destination = redrive_destination(
            message,
            keys=("stream",),
            configured={"stream": self.stream},
            origin=lambda: (
                {"stream": headers[STREAM_HEADER]} if headers.get(STREAM_HEADER) else None
            ),
        )
        if destination is None:
            raise NoRedriveTarget(
                "the message did not come from a Redis stream and neither the request nor the "
                "queue's handler options name a stream"
            )
        try:
            fields = fields_to_publish(
                headers=headers, body=bytes(message.body), body_field=self.body_field
            )
        except FieldsUnreadable as exc:
            raise PermanentFailure(str(exc)) from exc
        # The id of this Antidote message, in place of any earlier one (an entry redriven before).
        flat = []
        for name, value in fields:
            if name != self.id_field:
                flat += (name, value)
        flat += (self.id_field, message.id)
        batch = self._open_batch()
        deferred = Deferred(self._settle)
        batch.add(destination["stream"], flat, deferred)
        if len(batch.waiting) >= self.window:
            batch.send()
        return deferred

    def settle(self):
        """Send what this process queued, resolve its Deferreds, close its connection."""
        batch = self._batch
        if batch is None or batch.pid != os.getpid():
            return
        self._batch = None
        try:
            batch.send()
        finally:
            batch.close()
        if batch.failure is not None:
            self._failures.record(batch.failure)

    def _open_batch(self):
        pid = os.getpid()
        batch = self._batch
        if batch is not None and batch.pid == pid:
            return batch
        # A batch made by the parent of this process is the parent's: its socket is shared.
        self._failures.check()
        self._batch = _Batch(self.url_env, self.timeout)
        return self._batch


class _Batch:
    """The appends one process has queued and not yet sent, on its own connection."""

    def __init__(self, url_env, timeout):
        self.pid = os.getpid()
        self.url_env = url_env
        self.timeout = timeout
        self.client = None
        self.where = None
        self.secrets = ()  # what no reason may show: the URL, its user and password
        self.pipe = None
        self.waiting = []  # (stream, Deferred) per queued XADD, in order
        self.failure = None  # why the connection failed, when it did

    def add(self, stream, flat, deferred):
        if self.failure is not None:
            # The connection failed earlier in this batch: the rest fail at once, for the same
            # reason, rather than each wait for a connect.
            raise RedriveConnectionFailed(self.failure)
        if self.pipe is None:
            self._connect()
        self.pipe.execute_command("XADD", stream, "*", *flat)
        self.waiting.append((stream, deferred))

    def _connect(self):
        url = os.environ.get(self.url_env)
        if not url:
            raise RedriveConnectionFailed(f"{self.url_env} is not set")
        self.where = _where(url)
        self.secrets = _secrets(url)
        try:
            # No connection is made here: redis-py connects when the pipeline is sent.
            client = _client(url, self.url_env, timeout=self.timeout)
        except SourceDown as exc:
            raise RedriveConnectionFailed(str(exc)) from None
        self.client = client
        self.pipe = client.pipeline(transaction=False)

    def send(self):
        waiting, self.waiting = self.waiting, []
        if not waiting:
            return
        try:
            replies = self.pipe.execute(raise_on_error=False)
        except (redis.RedisError, OSError) as exc:
            # Part of the pipeline may have been written and applied: its outcome is unknown.
            # (A server that refuses the handshake answers an error: redis-py raises it here.)
            # What the server said may quote the login it was sent: scrubbed.
            reason = scrubbed(
                f"connection to Redis at {self.where} failed before it answered the XADD: "
                f"{_describe(exc)}",
                self.secrets,
            )
            self.failure = reason
            for _, deferred in waiting:
                deferred.fail(RedriveConnectionFailed(reason))
            self._drop()
            return
        for (stream, deferred), reply in zip(waiting, replies, strict=True):
            if isinstance(reply, Exception):
                deferred.fail(
                    RedriveRefused(
                        f"Redis at {self.where} refused the XADD to stream '{stream}': "
                        + scrubbed(str(reply), self.secrets)
                    )
                )
            else:
                deferred.done()

    def _drop(self):
        client, self.client, self.pipe = self.client, None, None
        if client is not None:
            # A connection already gone cannot fail any further.
            with contextlib.suppress(Exception):
                client.close()

    def close(self):
        self._drop()


def _describe(exc):
    text = str(exc)
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__
