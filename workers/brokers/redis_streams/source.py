"""The Redis Streams source (`CONNECTOR`, a `Source`, workers.brokers.base): drains poison
entries from consumer groups.

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
and acknowledgement loses nothing, and the ids being stable (record.message_id_of) ingest
stores nothing twice. Two links with the same consumer name would share that list: give each
Antidote that drains one group a name of its own.

What cannot become a message (see record: an entry with no body field whose fields are
not all text, an entry deleted from the stream while it was Antidote's) is parked: appended to
`<stream>:antidote-refused` with its fields and `antidote-refused-reason`, then acknowledged.

The sink is workers.brokers.redis_streams.sink; the connection, .connection.
"""

import contextlib
import time
from dataclasses import dataclass

import redis

from workers.brokers.base import Delivery, SourceConfig, SourceDown
from workers.brokers.redis_streams.connection import (
    SOCKET_TIMEOUT,
    as_text,
    client_for,
    is_int,
    secrets_of,
    url_check,
    where_of,
)
from workers.brokers.redis_streams.record import (
    UNKNOWN_CONSUMER,
    EntryMalformed,
    record_of,
)
from workers.brokers.registry import REDIS_STREAMS

KIND = REDIS_STREAMS.kind
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
OPTION_NAMES = set(REDIS_STREAMS.options)
POLL_SECONDS = 0.5
# A fetch lists at most this many pending entries of a group before answering: a group with a
# long backlog of healthy pending entries is read a slice per fetch, from where the last ended.
SCAN_PAGE = 1000
SCAN_BUDGET = 10_000
# lag() reads every pending entry of a group up to this many; beyond, it says it does not know.
LAG_EXACT_LIMIT = 10_000
LAG_SECONDS = 5.0


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


class RedisStreamsSourceLink:
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
        self.secrets = secrets_of(config.url)
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
            self.recovering[group] = "(" + as_text(rows[-1][0])
            ids = [as_text(row[0]) for row in rows]
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
                ids = [as_text(row[0]) for row in rows]
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
            listed = {as_text(row[0]): row for row in candidates}
            deliveries = []
            for claimed in pipe.execute():
                # Only what was won comes back: an entry handed out again since it was listed
                # is not idle any more. (Redis before 7 also returns a deleted one, as nil.)
                for entry in claimed:
                    if entry is None:
                        continue
                    entry_id, flat = as_text(entry[0]), entry[1]
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
                if row[3] >= self.min_deliveries and as_text(row[1]) != self.consumer:
                    found.append(row)
                    if len(found) == limit:
                        # The next listing starts after the last one taken.
                        self.cursors[group] = "(" + as_text(row[0])
                        return found
            if len(rows) < page:
                # The end of the list: the next listing starts again from the beginning.
                self.cursors[group] = "-"
                if found or not may_wrap:
                    return found
                start, may_wrap = "-", False
                continue
            start = "(" + as_text(rows[-1][0])
            self.cursors[group] = start
        return found

    def _delivery(self, group, row, flat, consumer):
        """The Delivery of an entry listed by XPENDING as `row`, with its fields `flat`; its
        last consumer is `consumer`, or the one `row` names when None."""
        fields = None if flat is None else _pairs(flat)
        size = sum(map(len, flat[: len(flat) // 2 * 2])) if fields else 0
        if consumer is None:
            consumer = as_text(row[1])
        entry = _Entry(
            group=group,
            entry_id=as_text(row[0]),
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
                if row[3] >= self.min_deliveries and as_text(row[1]) != self.consumer
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


class RedisStreamsSource:
    kind = KIND
    title = REDIS_STREAMS.title
    errors = (redis.RedisError,)
    sink = REDIS_STREAMS.redrive_handler

    def where(self, config: SourceConfig) -> str:
        url_check(config.url, config.url_env)
        return f"Redis at {where_of(config.url)}, stream '{config.drained}'"

    def open(self, config: SourceConfig):
        errors = self.options_errors(config.options)
        if errors:
            raise SourceDown("; ".join(errors))
        if not config.url:
            raise SourceDown(
                f"the environment variable {config.url_env} (the Redis URL) is not set"
            )
        options = _options(config.options)
        client = client_for(config.url, config.url_env)
        try:
            _check_groups(client, config.drained, options["groups"])
        except BaseException:
            client.close()
            raise
        return RedisStreamsSourceLink(config, client, options)

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
        if not is_int(min_deliveries) or min_deliveries < 1:
            errors.append("min_deliveries must be a whole number of at least 1")
        min_idle = options.get("min_idle_ms", DEFAULTS["min_idle_ms"])
        if not is_int(min_idle) or min_idle < 0:
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
    names = {as_text(info["name"]) for info in infos}
    missing = [g for g in groups if g not in names]
    if missing:
        raise SourceDown(
            f"stream '{stream}' has no consumer group {', '.join(repr(g) for g in missing)}"
        )


CONNECTOR = RedisStreamsSource()
