"""The poison rules as pure functions: current state in, the events that record the outcome out.

Every event carries the message's whole state after it (queue, delivery count, candidate flag,
...), so the current state of a message is simply its latest event. Nothing here does I/O or reads
a clock: the caller passes the time, which is how the tests check backoff schedules without
sleeping.
"""

import math
from datetime import datetime, timedelta

from workers.engine import states as S
from workers.lake.schema import STATE_FIELDS

_STATE_FIELD_SET = frozenset(STATE_FIELDS)


def event(
    current,
    to_state,
    *,
    at,
    actor,
    run_id,
    attempt=0,
    reason=None,
    exception_type=None,
    stack=None,
    queue_streak=None,
    **changes,
):
    """One ledger row: `current`'s state fields, overridden by `changes`, entering `to_state`.
    On the delivery path for every message, so it is built in one go."""
    if (current["state"], to_state) not in S.ALLOWED_TRANSITIONS:
        raise ValueError(f"transition {current['state']} -> {to_state} is not allowed")
    row = {
        "message_id": current["message_id"],
        "from_state": current["state"],
        "to_state": to_state,
        "at": at,
        "attempt": attempt,
        "actor": actor,
        "run_id": run_id,
        "reason": reason,
        "exception_type": exception_type,
        "stack": stack,
        "queue_streak": queue_streak,
        "queue": current["queue"],
        "delivery_count": current["delivery_count"],
        "candidate": current["candidate"],
        "batch_limit": current["batch_limit"],
        "next_attempt_at": current["next_attempt_at"],
        "body_version": current["body_version"],
    }
    if changes:
        unknown = changes.keys() - _STATE_FIELD_SET
        if unknown:
            raise TypeError(f"unknown state fields: {sorted(unknown)}")
        row.update(changes)
    return row


def advance(current, ev):
    """The state a message is in after `ev`, as the next rule sees it."""
    nxt = dict(current)
    nxt["state"] = ev["to_state"]
    for name in STATE_FIELDS:
        nxt[name] = ev[name]
    return nxt


def next_periodic_run(failed_at, interval):
    """The first periodic run strictly after `failed_at`; periodic runs fall on multiples of
    `interval` seconds since the Unix epoch, so every worker agrees on them (R5)."""
    ts = failed_at.timestamp()
    boundary = (math.floor(ts / interval) + 1) * interval
    return datetime.fromtimestamp(boundary, tz=failed_at.tzinfo)


def backoff_until(policy, attempts, failed_at):
    """R5: with `attempts` failed attempts so far, n = (attempts - 1) // backoff_every; the
    n-th delay if the table has one, else the queue's next periodic run."""
    n = (attempts - 1) // policy.backoff_every
    if n < len(policy.backoff_delays):
        return failed_at + timedelta(seconds=policy.backoff_delays[n])
    return next_periodic_run(failed_at, policy.periodic_interval)


def start_attempt(current, *, at, actor, run_id):
    """R1: the events that take a due message into delivery (WAIT first becomes TBDL)."""
    events = []
    if current["state"] == S.WAIT:
        ev = event(
            current,
            S.TBDL,
            at=at,
            actor=actor,
            run_id=run_id,
            reason=S.REASON_DUE,
            next_attempt_at=None,
        )
        events.append(ev)
        current = advance(current, ev)
    attempt = current["delivery_count"] + 1
    ev = event(current, S.DLNG, at=at, actor=actor, run_id=run_id, attempt=attempt)
    events.append(ev)
    return events, advance(current, ev)


def released(current, *, at, actor, run_id, reason=S.REASON_NOT_ATTEMPTED):
    """A run hands back a message it claimed and did not attempt (R11 disabled its queue during
    the run): due again as it was, neither charged nor flagged. Attempt 0: not an attempt."""
    return [event(current, S.TBDL, at=at, actor=actor, run_id=run_id, reason=reason)]


def delivered(current, *, at, actor, run_id, queue_streak=None):
    """R1: success. The message is no longer suspected of anything: a crash flag (R7) and the
    batch limit it carried (R8) are cleared."""
    return [
        event(
            current,
            S.DLVD,
            at=at,
            actor=actor,
            run_id=run_id,
            attempt=current["delivery_count"] + 1,
            queue_streak=queue_streak,
            candidate=False,
            batch_limit=0,
            next_attempt_at=None,
        )
    ]


def _failed_attempt(
    current, *, at, actor, run_id, exception_type=None, stack=None, queue_streak=None
):
    """R2: the number of the attempt that just failed (one more than the count so far), and
    what records its outcome: every event of a failed attempt carries the same time, worker,
    attempt number and failure details; `changes` are the state it leaves the message in."""
    attempt = current["delivery_count"] + 1

    def record(to_state, *, reason, **changes):
        return event(
            current,
            to_state,
            at=at,
            actor=actor,
            run_id=run_id,
            attempt=attempt,
            reason=reason,
            exception_type=exception_type,
            stack=stack,
            queue_streak=queue_streak,
            **changes,
        )

    return attempt, record


def _not_before(when, at, retry_after):
    """`when`, or `retry_after` seconds after `at` when that is later: the handler's own word on
    the earliest retry (workers.engine.handlers.TransientFailure) never brings one forward."""
    if retry_after is None:
        return when
    return max(when, at + timedelta(seconds=retry_after))


def _exception_destination(record, policy, *, at, attempt, detail, retry_after=None):
    """R3 + R4: the failure made delivery_count reach max_failed_deliveries."""
    reason = f"{S.REASON_MAX_FAILED} ({policy.max_failed_deliveries}): {detail}"
    target = policy.exception_queue
    if target is not None:
        # A new TBDL in the exception queue, keeping id and history; its count starts afresh
        # there so the exception queue's own policy applies from its first attempt.
        return [
            record(
                S.TBDL,
                reason=f"{reason}; moved to queue {target}",
                queue=target,
                delivery_count=0,
                candidate=False,
                batch_limit=0,
                next_attempt_at=None,
            )
        ]
    if policy.exception_destination == "none":
        return [
            record(
                S.WAIT,
                reason=f"{reason}; blocked, retried after {policy.blocked_retry_timeout} s",
                delivery_count=attempt,
                next_attempt_at=_not_before(
                    at + timedelta(seconds=policy.blocked_retry_timeout), at, retry_after
                ),
            )
        ]
    return [record(S.NDLV, reason=reason, delivery_count=attempt, next_attempt_at=None)]


def failed_transiently(current, policy, *, at, reason, retry_after=None, **failure):
    """R2, R3, R4, R5: a transient failure. `retry_after` (seconds, from the handler) puts the
    next attempt no earlier than that long after the failure. `failure`: who failed it and how,
    as `_failed_attempt` takes them (actor, run_id; exception_type, stack, queue_streak)."""
    attempt, record = _failed_attempt(current, at=at, **failure)
    if policy.max_failed_deliveries and attempt >= policy.max_failed_deliveries:
        return _exception_destination(
            record, policy, at=at, attempt=attempt, detail=reason, retry_after=retry_after
        )
    return [
        record(
            S.WAIT,
            reason=reason,
            delivery_count=attempt,
            next_attempt_at=_not_before(backoff_until(policy, attempt, at), at, retry_after),
        )
    ]


def failed_permanently(current, policy, *, at, actor, run_id, reason, **failure):
    """R6: no retry. Quarantine, or return to sender: quarantined and ended in the same instant,
    the queue's standing decision, so every recorded transition is one SEMANTICS.md allows.
    `failure`: how it failed (exception_type, stack, queue_streak), as `_failed_attempt` takes
    them."""
    attempt, record = _failed_attempt(current, at=at, actor=actor, run_id=run_id, **failure)
    quarantined = record(
        S.NDLV,
        reason=f"{S.REASON_PERMANENT}: {reason}",
        delivery_count=attempt,
        next_attempt_at=None,
    )
    if policy.on_permanent != "return_to_sender":
        return [quarantined]
    # The queue's decision, not another failure: no failure details on it.
    ended = event(
        advance(current, quarantined),
        S.ENDED,
        at=at,
        actor=actor,
        run_id=run_id,
        attempt=attempt,
        reason=f"{S.REASON_RETURNED}: {S.REASON_PERMANENT}: {reason}",
    )
    return [quarantined, ended]


def crashed(
    current,
    *,
    at,
    actor,
    run_id,
    batch_size,
    in_flight,
    charged=True,
    detail=None,
    queue_streak=None,
):
    """R7, R8, R10: the message was in DLNG when its batch's process died.

    Alone in the crashed batch and already a candidate: the second strike, NDLV. Otherwise back
    to TBDL, flagged, and from now on delivered in batches of at most half the crashed one, so
    the crashing message ends up alone in about log2(batch size) runs.

    R2: the crash counts as a failed attempt of the message whose handler was running
    (`charged`). A batch-mate whose handler had not started is flagged but not charged; only
    when nobody knows which message was in flight (a whole worker vanished) is every message
    it held charged, which is the default."""
    attempt, record = _failed_attempt(
        current, at=at, actor=actor, run_id=run_id, queue_streak=queue_streak
    )
    count = attempt if charged else current["delivery_count"]
    reason = S.REASON_CRASH
    if in_flight:
        reason = f"{S.REASON_FATAL} ({detail}); {S.REASON_CRASH}" if detail else S.REASON_FATAL
    if batch_size <= 1 and current["candidate"]:
        return [
            record(
                S.NDLV,
                reason=f"{S.REASON_BLACKLISTED} (last: {reason})",
                delivery_count=count,
                next_attempt_at=None,
            )
        ]
    limit = max(1, batch_size // 2)
    if current["batch_limit"]:
        limit = min(limit, current["batch_limit"])
    return [
        record(
            S.TBDL,
            reason=reason,
            candidate=True,
            batch_limit=limit,
            delivery_count=count,
            next_attempt_at=None,
        )
    ]


def poisoned(current, *, at, actor, run_id, entry_reason):
    """R9: on the shared poison list; the handler is not called."""
    reason = S.REASON_POISON_LIST
    if entry_reason:
        reason = f"{reason}: {entry_reason}"
    return [
        event(
            current, S.NDLV, at=at, actor=actor, run_id=run_id, reason=reason, next_attempt_at=None
        )
    ]
