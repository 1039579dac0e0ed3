"""What a message's numbers and flags mean, in words, for its screens. Pure functions.

- `attempt_words`: an event's attempt number and delivery count (R2). The attempt is the number
  of the handler call the event belongs to (0: no call, such as arriving, a retry falling due or
  a decision); the count is how many attempts had failed or crashed once the event was recorded.
- `suspected`: whether the "blacklist candidate" flag (R7, R8) still means something. The engine
  sets it on every unfinished message of a batch that crashed, most of which did nothing wrong,
  and clears it only on delivery or reprocessing. It tells an operator something only while the
  message is retried alone because of that crash: once it fails for a reason of its own, that
  reason is the news; once it is quarantined, its reason says why (blacklisted or otherwise).
"""

from workers.engine.states import DLNG, REASON_CRASH, REASON_FATAL, TBDL, WAIT

# The states in which a crash-flagged message is still on its way through isolation (R8).
_ISOLATING = (TBDL, DLNG, WAIT)

CANDIDATE_TITLE = (
    "In a batch when a worker crashed: delivered alone until it proves innocent "
    "(delivered) or is blacklisted (in flight during a second crash)."
)


def _times(n):
    return "once" if n == 1 else "twice" if n == 2 else f"{n} times"


def attempt_words(attempt, count):
    """(3, 2) -> "delivery attempt 3; failed twice so far"; (0, 0) -> "no failure so far"."""
    count = int(count or 0)
    so_far = f"failed {_times(count)} so far" if count else "no failure so far"
    if not attempt:
        return so_far
    return f"delivery attempt {attempt}; {so_far}"


def is_crash_reason(reason):
    """R7, R10: the reason a crash leaves on the messages it caught."""
    reason = reason or ""
    return REASON_CRASH in reason or reason.startswith(REASON_FATAL)


def is_batch_mate_reason(reason):
    """R8: caught by a crash while another message's handler (or none) was running: "in flight
    when a worker crashed" alone, not a fatal error of its own handler."""
    return (reason or "").startswith(REASON_CRASH)


def suspected(*, state, candidate, reason):
    """The candidate flag, while it means something: flagged, still being isolated, and its
    latest failure was the crash (not a failure of its own since)."""
    return bool(candidate) and state in _ISOLATING and is_crash_reason(reason)
