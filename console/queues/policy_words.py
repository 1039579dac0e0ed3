"""A queue's delivery policy in sentences, for people: "after 5 failed attempts, quarantine"
rather than `max_failed_deliveries 5`.

Pure functions over anything with the policy's attributes (a Queue, a QueuePolicy): no database,
no clock, so the tests feed them plain values. The rules they speak of are SEMANTICS.md's; the
field names are the model's (console.queues.models.POLICY_FIELDS)."""

from datetime import UTC

from console.glossary import code_title
from workers.engine.policy import EXCEPTION_NONE, EXCEPTION_QUEUE_PREFIX

_UNITS = ((86400, "day", "days"), (3600, "h", "h"), (60, "min", "min"), (1, "s", "s"))


def duration(seconds):
    """300 -> "5 min", 5400 -> "1 h 30 min", 86400 -> "1 day", 0 -> "no time": the two largest
    units that say it, which is as exact as a person needs a delay."""
    seconds = int(seconds)
    if seconds <= 0:
        return "no time"
    parts = []
    for size, one, many in _UNITS:
        n, seconds = divmod(seconds, size)
        if n:
            parts.append(f"{n} {one if n == 1 else many}")
        if len(parts) == 2:
            break
    return " ".join(parts)


def _attempts(first, last):
    if first == last:
        return f"attempt {first}"
    return f"attempts {first}\N{EN DASH}{last}"


def _failures(n):
    return "1 failed attempt" if n == 1 else f"{n} failed attempts"


def exception_words(policy):
    """R3 + R4: what happens when a message has failed too often."""
    destination = policy.exception_destination
    if destination.startswith(EXCEPTION_QUEUE_PREFIX):
        then = f"move it to queue {destination[len(EXCEPTION_QUEUE_PREFIX) :]}"
    elif destination == EXCEPTION_NONE:
        then = (
            "keep it in its queue and try it again every "
            f"{duration(policy.blocked_retry_timeout)}, without ever quarantining it"
        )
    else:
        then = "quarantine"
    if not policy.max_failed_deliveries:
        return "no limit on failed attempts: it is retried until it succeeds or someone decides"
    return f"after {_failures(policy.max_failed_deliveries)}, {then}"


def backoff_words(policy):
    """R5: how long a message waits after each failed attempt. With k = backoff_every, delay n
    applies to attempts n*k+1 .. (n+1)*k; past the table, the queue's next periodic run."""
    every = max(1, int(policy.backoff_every))
    delays = list(policy.backoff_delays)
    periodic = f"until the next periodic run (every {duration(policy.periodic_interval)})"
    if not delays:
        return f"after a failed attempt, waits {periodic}"
    steps = []
    for n, delay in enumerate(delays):
        steps.append(f"{duration(delay)} after {_attempts(n * every + 1, (n + 1) * every)}")
    steps[0] = f"waits {steps[0]}"
    return f"{', then '.join(steps)}, then {periodic}"


def permanent_words(policy):
    """R6: a failure the handler declares permanent."""
    if policy.on_permanent == "return_to_sender":
        return (
            "a permanent failure is not retried: the message is ended with an error and its "
            "sender told, at once"
        )
    return "a permanent failure is not retried: the message is quarantined at once"


def crash_words(policy):
    """R7 + R8: not a setting, but what a queue does with crashes, said where its policy is."""
    return (
        "messages in flight when a worker crashes are tried again in smaller batches, down to "
        "alone; one in flight during a second crash is quarantined (blacklisted)"
    )


def poison_words(policy):
    """R9: what keeps a message from its handler."""
    if policy.poison_match == "id_or_body":
        return "skips any message whose id or body is on the poison list (quarantines it)"
    return "skips any message whose id is on the poison list (quarantines it)"


def disable_words(policy):
    """R11: when the queue stops itself."""
    if not policy.disable_after:
        return "never disables itself"
    return (
        f"disables itself after {_failures(policy.disable_after)} in a row; "
        "an administrator enables it again"
    )


def retention_words(policy):
    """R15."""
    days = policy.retention_days
    return f"keeps finished messages {days} day{'' if days == 1 else 's'}, then purges them"


def handler_words(policy):
    """Who processes the queue's messages: the path of the operator's own handler, or the title
    of one the product provides ("Redis Streams redrive"), with its options by their titles
    (console.glossary: the glossary gives each one's path or name)."""
    options = policy.handler_options or {}
    said = f"processed by {code_title(policy.handler)}"
    if options:
        said += " with " + ", ".join(f"{code_title(k)} = {v}" for k, v in sorted(options.items()))
    return said


def edit_words(policy):
    """R13, R18: what an edit of one of the queue's messages keeps as it is."""
    locked = list(getattr(policy, "locked_headers", None) or ())
    said = "an edit keeps the product's own headers"
    if locked:
        said += " and " + ", ".join(locked) + " (locked) as they are"
    else:
        said += " as they are; every other header may be edited"
    return said


def policy_sentences(policy):
    """[(topic, sentence)] for a queue's whole policy, in the order a message meets it."""
    return [
        ("handler", handler_words(policy)),
        ("failed attempts", exception_words(policy)),
        ("waiting between attempts", backoff_words(policy)),
        ("permanent failures", permanent_words(policy)),
        ("crashes", crash_words(policy)),
        ("poison list", poison_words(policy)),
        ("disabling", disable_words(policy)),
        ("edits", edit_words(policy)),
        ("retention", retention_words(policy)),
    ]


# --- A queue's changes, and one that disabled itself again (R11) ---------------------------------

ENABLED = "queue.enabled"
DISABLED = "queue.disabled"

# The audit actions recorded on a queue, as its page says them (the audit trail keeps the keys).
QUEUE_ACTIONS = {
    "queue.created": "created",
    "policy.changed": "policy changed",
    ENABLED: "enabled",
    DISABLED: "disabled by itself",
    "queue.paused": "paused",
    "alerts.threshold_set": "alert threshold set",
    "alerts.threshold_removed": "alert threshold removed",
}


def queue_action_words(action):
    return QUEUE_ACTIONS.get(action, action)


_DISABLED_PREFIX = "queue disabled: "


def relapse(entries):
    """A queue's latest audit entries, newest first (objects with `at`, `actor`, `action`,
    `details`): if the newest is R11 disabling it and the one before was someone enabling it,
    {"disabled_at", "enabled_at", "enabled_by", "seconds", "why"}; else None. Re-enabling
    fixes nothing by itself: a queue that stops again at once says so where it is enabled."""
    if len(entries) < 2:
        return None
    disabled, enabled = entries[0], entries[1]
    if disabled.action != DISABLED or enabled.action != ENABLED:
        return None
    why = str((disabled.details or {}).get("reason") or "")
    return {
        "disabled_at": disabled.at,
        "enabled_at": enabled.at,
        "enabled_by": enabled.actor,
        "seconds": max(0, int((disabled.at - enabled.at).total_seconds())),
        "why": why.removeprefix(_DISABLED_PREFIX),
    }


def relapse_words(found):
    """`relapse`'s answer as one sentence: "disabled again by itself at 2026-11-27 09:12:03 UTC,
    4 s after alice enabled it: 3 failed attempts in a row"."""
    at = found["disabled_at"].astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    seconds, who = found["seconds"], found["enabled_by"]
    after = (
        f"{duration(seconds)} after {who} enabled it" if seconds else f"as soon as {who} enabled it"
    )
    said = f"disabled again by itself at {at}, {after}"
    return f"{said}: {found['why']}" if found["why"] else said
