"""Deliver one partition of due messages: batching, the poison list, handler calls in isolation,
and the events that record every outcome. Plain Python and pyarrow: the Spark job feeds it Arrow
batches and writes what it yields; the tests can drive it directly too.
"""

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc

from workers.engine import isolation as iso
from workers.engine import rules
from workers.engine import states as S
from workers.engine.handlers import HandlerImportError, Message, handler_build
from workers.engine.poison_feed import PoisonFeed
from workers.engine.timings import HandlerTimes, times_write
from workers.lake.schema import EVENT_SCHEMA, MESSAGE_CONTENT_COLUMNS, STATE_FIELDS
from workers.logcontext import log_context


@dataclass
class RunContext:
    run_id: str
    epoch: int
    policies: dict  # queue name -> QueuePolicy
    now: datetime
    # Tests freeze the clock at `now`; real runs stamp each outcome with the time it happened.
    fixed_clock: bool = False
    max_batch: int = 5000
    max_batch_bytes: int = 64 * 1024 * 1024
    handler_timeout: float = 300.0
    # R9: the poison list the claims were marked with is as of this cursor of its change log;
    # entries added since reach the run through the feed in this directory ("" for none).
    poison_cursor: int = 0
    poison_feed_dir: str = ""
    # Where each partition writes how long its handlers took (workers.engine.timings); "" for
    # nowhere.
    timings_dir: str = ""
    host: str = field(default_factory=lambda: os.uname().nodename)

    def clock(self):
        return self.now if self.fixed_clock else datetime.now(UTC)


class QueueStreaks:
    """R11: failed attempts in a row per queue, and which queues reached disable_after.

    The child that calls handlers and the parent that records outcomes both replay the same
    outcome codes through this, so they agree on where a queue was disabled."""

    def __init__(self, policies):
        self.limits = {q: p.disable_after for q, p in policies.items() if p.disable_after}
        self.counts = {q: policies[q].consecutive_failures for q in self.limits}

    def disabled(self, queue):
        limit = self.limits.get(queue)
        return bool(limit) and self.counts[queue] >= limit

    def record(self, queue, code):
        if queue not in self.limits:
            return None
        if code == iso.SUCCESS:
            self.counts[queue] = 0
        elif code in (iso.TRANSIENT, iso.PERMANENT):
            self.counts[queue] += 1
        return self.counts[queue]

    def snapshot(self):
        clone = QueueStreaks.__new__(QueueStreaks)
        clone.limits = self.limits
        clone.counts = dict(self.counts)
        return clone


_handlers = {}


def _handler_for(policy):
    """Build each queue's handler once per process; remember an import error as its result."""
    key = (policy.handler, json.dumps(policy.handler_options, sort_keys=True))
    if key not in _handlers:
        try:
            _handlers[key] = handler_build(policy.handler, policy.handler_options)
        except HandlerImportError as exc:
            _handlers[key] = exc
    return _handlers[key]


# A due message's state and content (its body's hash too: entries added to the poison list
# during the run are checked by it), and the poison list's verdict when the run claimed it.
ROW_FIELDS = ("message_id", "state", *STATE_FIELDS, *MESSAGE_CONTENT_COLUMNS, "poison_reason")
# Columns a fast event copies from its message's row as they are.
_COPIED = ("message_id", "queue", "delivery_count", "body_version")


class _Columns:
    """One Arrow batch of due messages, as Python lists per column (one conversion per column,
    not one dict per row) and the batch itself, for taking whole columns at once."""

    def __init__(self, batch):
        self.batch = batch
        names = set(batch.schema.names)
        self.cols = {
            f: batch.column(f).to_pylist() if f in names else [None] * batch.num_rows
            for f in ROW_FIELDS
        }

    def row(self, i):
        return {f: self.cols[f][i] for f in ROW_FIELDS}

    def message(self, i):
        c = self.cols
        return Message(
            id=c["message_id"][i],
            queue=c["queue"][i],
            body=c["body"][i] or b"",
            content_type=c["content_type"][i] or "",
            headers_json=c["headers"][i],
            conversation_id=c["conversation_id"][i],
            sender=c["sender"][i],
            enqueued_at=c["enqueued_at"][i],
            delivery_count=c["delivery_count"][i],
            attempt=c["delivery_count"][i] + 1,
            redrive_target=c["redrive_target"][i],
        )


def _groups(view, ctx):
    """Cut a batch into isolation batches, one queue at a time: a handler that crashes takes
    down messages of its own queue only. Messages that a crash flagged carry a batch limit (R8)
    and are batched only with messages under the same limit."""
    limits = view.cols["batch_limit"]
    sizes = view.cols["body_size"]
    queues = view.cols["queue"]
    pending = {}
    for i in range(view.batch.num_rows):
        limit = min(limits[i] or ctx.max_batch, ctx.max_batch)
        key = (queues[i], limit)
        group = pending.setdefault(key, [[], 0])
        group[0].append(i)
        group[1] += sizes[i] or 0
        if len(group[0]) >= limit or group[1] >= ctx.max_batch_bytes:
            del pending[key]
            yield group[0]
    for group, _ in pending.values():
        yield group


def _outcome_events(current, code, failure, policy, ctx, actor, streak, retry_after=None):
    at = ctx.clock()
    if code == iso.SUCCESS:
        return rules.delivered(current, at=at, actor=actor, run_id=ctx.run_id, queue_streak=streak)
    reason, exc_type, stack = failure or ("the handler failed without saying why", None, None)
    args = dict(
        at=at,
        actor=actor,
        run_id=ctx.run_id,
        reason=reason,
        exception_type=exc_type,
        stack=stack,
        queue_streak=streak,
    )
    if code == iso.PERMANENT:
        return rules.failed_permanently(current, policy, **args)
    return rules.failed_transiently(current, policy, retry_after=retry_after, **args)


class Sequence:
    """Numbers a partition's events in the order they happened: (partition << 32) + n."""

    def __init__(self, partition=0):
        self.next = (partition << 32) + 1

    def take(self, count):
        first = self.next
        self.next += count
        return first


def _taken(view, i, ctx):
    """The message as its run's claim left it: in DLNG (R1). The claim's own events (TBDL ->
    DLNG, after WAIT -> TBDL for a due retry) were committed before any handler ran
    (workers.jobs.delivery.claim_events); the outcome events follow from this state."""
    _, current = rules.start_attempt(view.row(i), at=ctx.now, actor="", run_id=ctx.run_id)
    return current


def _deliver_group(view, group, ctx, streaks, sequence, feed=None, times=None):
    """Deliver one isolation batch. Returns its events as one Arrow table: each message's
    events together, in order; messages numbered in the order they were processed."""
    start = ctx.clock()
    run_actor = f"{ctx.host}/run {ctx.run_id}"
    slow = {}  # index -> event dicts, for every outcome but the common one
    attempts = []
    handlers = {}
    for i in group:
        queue = view.cols["queue"][i]
        if streaks.disabled(queue):
            # R11: the queue was disabled earlier in this run; the message is due again.
            slow[i] = rules.released(
                _taken(view, i, ctx), at=start, actor=run_actor, run_id=ctx.run_id
            )
            continue
        poison = view.cols["poison_reason"][i]
        if poison is None and feed is not None:
            # R9: reported since the run claimed it (an outside application, another run).
            poison = feed.reason(
                view.cols["message_id"][i],
                view.cols["body_sha256"][i],
                by_body=ctx.policies[queue].poison_match == "id_or_body",
            )
        if poison is not None:
            slow[i] = rules.poisoned(
                _taken(view, i, ctx),
                at=start,
                actor=run_actor,
                run_id=ctx.run_id,
                entry_reason=poison,
            )
            continue
        handler = handlers.get(queue)
        if handler is None:
            handler = _handler_for(ctx.policies[queue])
        if isinstance(handler, HandlerImportError):
            # Not called, so not a crash; transient so that R3 quarantines it in the end and
            # a fixed deployment can still deliver it meanwhile.
            failure = (f"handler cannot be imported: {handler}", "HandlerImportError", None)
            streak = streaks.record(queue, iso.TRANSIENT)
            slow[i] = _outcome_events(
                _taken(view, i, ctx),
                iso.TRANSIENT,
                failure,
                ctx.policies[queue],
                ctx,
                run_actor,
                streak,
            )
            continue
        handlers[queue] = handler
        attempts.append(i)
    fast, fast_streaks, worker = [], [], run_actor
    if attempts:
        fast, fast_streaks, worker = _attempt(
            view, attempts, handlers, ctx, streaks, start, slow, times
        )
    return _events_table(view, group, fast, fast_streaks, slow, ctx, worker, sequence)


def _attempt(view, attempts, handlers, ctx, streaks, start, slow, times=None):
    """Call the handlers of one batch in isolation. The common outcome, a message delivered,
    is returned as an index to be written column-wise; every other outcome goes through the
    rules into `slow`."""
    messages = [view.message(i) for i in attempts]

    def call(message):
        return handlers[message.queue](message)

    # What a handler logs names its run and queue (an isolation batch is of one queue), where
    # logging is set up: in the worker's process, not in a Spark executor's Python. Per batch,
    # not per message: the engine calls handlers millions of times.
    with log_context(run_id=ctx.run_id, queue=messages[0].queue):
        result = iso.run_isolated(
            messages, call, timeout=ctx.handler_timeout, streaks=streaks.snapshot()
        )
    if times is not None:
        times.add(messages[0].queue, result.time_counts, result.time_sum)
    actor = f"{result.worker}/run {ctx.run_id}"
    run_actor = f"{ctx.host}/run {ctx.run_id}"
    fast, fast_streaks = [], []
    queues = view.cols["queue"]
    for k, (i, code) in enumerate(zip(attempts, result.codes, strict=True)):
        queue = queues[i]
        if code == iso.SUCCESS:
            fast.append(i)
            fast_streaks.append(streaks.record(queue, code))
            continue
        current = _taken(view, i, ctx)
        if code == iso.SKIPPED:
            # R11 stopped this queue inside the batch: never called, due again.
            slow[i] = rules.released(current, at=start, actor=run_actor, run_id=ctx.run_id)
            continue
        if code == iso.PENDING:
            in_flight = k == result.in_flight
            streak = streaks.record(queue, iso.TRANSIENT) if in_flight else None
            slow[i] = rules.crashed(
                current,
                at=ctx.clock(),
                actor=actor,
                run_id=ctx.run_id,
                batch_size=len(attempts),
                in_flight=in_flight,
                # R2: the crash is charged to the message whose handler was running; the
                # others had not started (those that had returned have their own outcome).
                charged=in_flight,
                detail=result.crash,
                queue_streak=streak,
            )
            continue
        streak = streaks.record(queue, code)
        slow[i] = _outcome_events(
            current,
            code,
            result.failures.get(k),
            ctx.policies[queue],
            ctx,
            actor,
            streak,
            retry_after=result.retry_after.get(k),
        )
    return fast, fast_streaks, actor


def _events_table(view, group, fast, fast_streaks, slow, ctx, worker, sequence):
    fast_set = set(fast)
    fast_steps = []
    for i in group:  # number every message's events in the order the batch processed them
        if i in fast_set:
            fast_steps.append(sequence.take(1))
        elif i in slow:
            first = sequence.take(len(slow[i]))
            for offset, ev in enumerate(slow[i]):
                ev["epoch"] = ctx.epoch
                ev["step"] = first + offset
    parts = []
    if fast:
        parts.append(_delivered_columns(view, fast, fast_steps, fast_streaks, ctx, worker))
    slow_events = [ev for i in group if i in slow for ev in slow[i]]
    if slow_events:
        parts.append(pa.Table.from_pylist(slow_events, schema=EVENT_SCHEMA))
    if not parts:
        return None
    return pa.concat_tables(parts)


def _delivered_columns(view, fast, steps, streaks, ctx, worker):
    """DLNG -> DLVD for many messages at once: columns taken from their rows and constants.
    A delivered message is no longer suspected of anything (rules.delivered): no crash flag,
    no batch limit."""
    n = len(fast)
    taken = view.batch.take(pa.array(fast, pa.int32()))
    copied = {name: taken.column(name) for name in _COPIED}
    return pa.table(
        {
            "message_id": copied["message_id"],
            "epoch": pa.repeat(pa.scalar(ctx.epoch, pa.int64()), n),
            "step": pa.array(steps, pa.int64()),
            "at": pa.repeat(pa.scalar(ctx.clock(), EVENT_SCHEMA.field("at").type), n),
            "from_state": pa.repeat(pa.scalar(S.DLNG), n),
            "to_state": pa.repeat(pa.scalar(S.DLVD), n),
            "queue": copied["queue"],
            "attempt": pc.cast(pc.add(copied["delivery_count"], 1), pa.int32()),
            "delivery_count": copied["delivery_count"],
            "candidate": pa.repeat(pa.scalar(False), n),
            "batch_limit": pa.repeat(pa.scalar(0, pa.int32()), n),
            "next_attempt_at": pa.nulls(n, EVENT_SCHEMA.field("next_attempt_at").type),
            "body_version": copied["body_version"],
            "actor": pa.repeat(pa.scalar(worker), n),
            "run_id": pa.repeat(pa.scalar(ctx.run_id), n),
            "reason": pa.nulls(n, pa.string()),
            "exception_type": pa.nulls(n, pa.string()),
            "stack": pa.nulls(n, pa.string()),
            "queue_streak": pa.array(streaks, pa.int32()),
        },
        schema=EVENT_SCHEMA,
    )


def deliver_batches(batches, ctx, *, partition=0):
    """Deliver a partition, given as Arrow record batches of due messages (ROW_FIELDS), batch
    by batch; yield each isolation batch's events as an Arrow table as soon as it is done."""
    streaks = QueueStreaks(ctx.policies)
    sequence = Sequence(partition)
    # Only what changes from the run's cursor on: the claims carry the verdict of the list as it
    # was then. Entries removed meanwhile take effect at the next run.
    feed = PoisonFeed(ctx.poison_feed_dir, ctx.poison_cursor) if ctx.poison_feed_dir else None
    times = HandlerTimes()
    for batch in batches:
        if batch.num_rows == 0:
            continue
        view = _Columns(batch)
        for group in _groups(view, ctx):
            if feed is not None:
                feed.refresh()  # R9: before every batch
            table = _deliver_group(view, group, ctx, streaks, sequence, feed, times)
            if table is not None and table.num_rows:
                yield table
    if ctx.timings_dir:
        times_write(times, ctx.timings_dir, partition)
