"""Deliver one partition of due messages: batching, the poison list, handler calls in isolation,
and the events that record every outcome. Plain Python: the Spark job feeds it rows and writes
what it yields; the tests drive it directly too.
"""

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime

from workers.engine import isolation as iso
from workers.engine import rules
from workers.engine import states as S
from workers.engine.handlers import HandlerImportError, Message, load_handler


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


def _handler_for(path):
    """Import each handler once per process; remember an import error as the handler's result."""
    if path not in _handlers:
        try:
            _handlers[path] = load_handler(path)
        except HandlerImportError as exc:
            _handlers[path] = exc
    return _handlers[path]


def _message(row):
    headers = row.get("headers")
    return Message(
        id=row["message_id"],
        queue=row["queue"],
        body=row.get("body") or b"",
        content_type=row.get("content_type") or "",
        headers=json.loads(headers) if headers else {},
        conversation_id=row.get("conversation_id"),
        sender=row.get("sender"),
        enqueued_at=row.get("enqueued_at"),
        delivery_count=row["delivery_count"],
        attempt=row["delivery_count"] + 1,
    )


def _batches(rows, ctx):
    """Cut the partition into isolation batches. Messages that a crash flagged carry a batch
    limit (R8) and are batched only with messages under the same limit."""
    pending = {}
    for row in rows:
        limit = min(row.get("batch_limit") or ctx.max_batch, ctx.max_batch)
        group = pending.setdefault(limit, [[], 0])
        group[0].append(row)
        group[1] += row.get("body_size") or 0
        if len(group[0]) >= limit or group[1] >= ctx.max_batch_bytes:
            del pending[limit]
            yield group[0]
    for group, _ in pending.values():
        yield group


def _outcome_events(current, code, failure, policy, ctx, actor, streak):
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
    return rules.failed_transiently(current, policy, **args)


class Sequence:
    """Numbers a partition's events in the order they happened: (partition << 32) + n."""

    def __init__(self, partition=0):
        self.next = (partition << 32) + 1

    def number(self, events, epoch):
        for ev in events:
            ev["epoch"] = epoch
            ev["step"] = self.next
            self.next += 1
        return events


def deliver_batch(batch, ctx, streaks, sequence):
    """Deliver one isolation batch; return its events."""
    events = []
    attempts = []
    start = ctx.clock()
    actor = f"{ctx.host}/run {ctx.run_id}"
    for row in batch:
        if streaks.disabled(row["queue"]):
            continue  # R11: the queue was disabled earlier in this run; the message stays due
        started, current = rules.start_attempt(row, at=start, actor=actor, run_id=ctx.run_id)
        if row.get("poison_reason") is not None:
            events += started
            events += rules.poisoned(
                current, at=start, actor=actor, run_id=ctx.run_id, entry_reason=row["poison_reason"]
            )
            continue
        attempts.append((row, current, started))
    if attempts:
        events += _attempt(attempts, ctx, streaks)
    return sequence.number(events, ctx.epoch)


def _attempt(attempts, ctx, streaks):
    """Call the handlers of one batch in isolation and record each outcome after the events
    that took the message into delivery."""
    events = []
    callable_rows = []
    for row, current, started in attempts:
        handler = _handler_for(ctx.policies[row["queue"]].handler)
        if isinstance(handler, HandlerImportError):
            # Not called, so not a crash; transient so that R3 quarantines it in the end and
            # a fixed deployment can still deliver it meanwhile.
            failure = (f"handler cannot be imported: {handler}", "HandlerImportError", None)
            streak = streaks.record(row["queue"], iso.TRANSIENT)
            events += started
            events += _outcome_events(
                current,
                iso.TRANSIENT,
                failure,
                ctx.policies[row["queue"]],
                ctx,
                f"{ctx.host}/run {ctx.run_id}",
                streak,
            )
            continue
        callable_rows.append((row, current, started, handler))
    if not callable_rows:
        return events
    messages = [_message(row) for row, _, _, _ in callable_rows]
    by_queue = {row["queue"]: handler for row, _, _, handler in callable_rows}

    def call(message):
        by_queue[message.queue](message)

    result = iso.run_isolated(
        messages, call, timeout=ctx.handler_timeout, streaks=streaks.snapshot()
    )
    actor = f"{result.worker}/run {ctx.run_id}"
    batch_size = len(callable_rows)
    for index, ((row, current, started, _), code) in enumerate(
        zip(callable_rows, result.codes, strict=True)
    ):
        if code == iso.SKIPPED:
            continue  # R11 stopped this queue inside the batch: never taken, still due
        events += started
        if code == iso.PENDING:
            in_flight = index == result.in_flight
            streak = streaks.record(row["queue"], iso.TRANSIENT) if in_flight else None
            events += rules.crashed(
                current,
                at=ctx.clock(),
                actor=actor,
                run_id=ctx.run_id,
                batch_size=batch_size,
                in_flight=in_flight,
                detail=result.crash,
                queue_streak=streak,
            )
            continue
        streak = streaks.record(row["queue"], code)
        events += _outcome_events(
            current,
            code,
            result.failures.get(index),
            ctx.policies[row["queue"]],
            ctx,
            actor,
            streak,
        )
    return events


def deliver_rows(rows, ctx, *, partition=0):
    """Deliver a partition's rows batch by batch, yielding each batch's events as it finishes."""
    streaks = QueueStreaks(ctx.policies)
    sequence = Sequence(partition)
    for batch in _batches(rows, ctx):
        events = deliver_batch(batch, ctx, streaks, sequence)
        if events:
            yield events


def is_due(row, now):
    return row["state"] == S.TBDL or (
        row["state"] == S.WAIT
        and row["next_attempt_at"] is not None
        and row["next_attempt_at"] <= now
    )
