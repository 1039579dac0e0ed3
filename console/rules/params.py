"""A standing rule's parameters, checked alike wherever it is proposed (the console's form, the
API, a queue file): each kind takes its own, every problem is said in words, naming the
parameter, and one of another kind is refused rather than ignored."""

import re

from django.core.exceptions import ValidationError

from console.decisions.services import progression_check
from console.queues.models import Queue
from console.readmodels.models import FailureGroup
from console.rules.models import (
    ARCHIVE,
    ATTEMPTS_MAX,
    AUTO_RETRY,
    COMMENT_MAX,
    DAYS_MAX,
    DELAY_MAX_SECONDS,
    KINDS,
    NAME_MAX,
    REDIRECT,
)

# What each kind takes, beside its name, kind and comment (its parameters' field names).
PARAMETERS = {
    ARCHIVE: ("queue", "group", "exception_type", "days"),
    REDIRECT: ("queue", "to_queue"),
    AUTO_RETRY: ("group", "delay_seconds", "max_attempts", "steps", "refailure_threshold"),
}
EVERY_PARAMETER = tuple(dict.fromkeys(p for names in PARAMETERS.values() for p in names))
_NAME = re.compile(rf"^[A-Za-z0-9][A-Za-z0-9._-]{{0,{NAME_MAX - 1}}}$")


def _whole(value, name, low, high, problems):
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        problems.append(f"{name} is a whole number from {low:,} to {high:,}")
        return None
    return value


def _queue(value, name, problems):
    if not isinstance(value, str) or not value:
        problems.append(f"{name} names a queue")
    elif not Queue.objects.filter(name=value).exists():
        problems.append(f"{name}: there is no queue {value!r}")
    return value if isinstance(value, str) else ""


def _text(value, name, limit, problems):
    if value in (None, ""):
        return ""
    if not isinstance(value, str) or len(value) > limit:
        problems.append(f"{name} is text of at most {limit:,} characters")
        return ""
    return value


def _archive(params, problems):
    queue = _queue(params.get("queue"), "queue", problems)
    group = _text(params.get("group"), "group", 64, problems)
    exception_type = _text(params.get("exception_type"), "exception_type", 200, problems)
    if not (group or exception_type):
        problems.append("an archive rule names a failure group, an exception type, or both")
    known = FailureGroup.objects.filter(fingerprint=group).values_list("queue", flat=True).first()
    if group and known and queue and known != queue:
        problems.append(f"group {group} is a group of the queue {known}, not of {queue}")
    days = _whole(params.get("days"), "days", 1, DAYS_MAX, problems)
    return {"queue": queue, "group": group, "exception_type": exception_type, "days": days}


def _redirect(params, problems):
    queue = _queue(params.get("queue"), "queue", problems)
    to_queue = _queue(params.get("to_queue"), "to_queue", problems)
    if queue and queue == to_queue:
        problems.append("a redirect sends a queue's reprocesses to another queue, not to itself")
    return {"queue": queue, "to_queue": to_queue}


def _auto_retry(params, problems):
    group = _text(params.get("group"), "group", 64, problems)
    if not group:
        problems.append("an auto-retry rule names a failure group (its fingerprint)")
    # The group's queue, for the lists and for the open requests it looks at; a group not seen
    # (yet, or any more) is kept by its fingerprint alone.
    queue = FailureGroup.objects.filter(fingerprint=group).values_list("queue", flat=True).first()
    delay = _whole(params.get("delay_seconds"), "delay_seconds", 0, DELAY_MAX_SECONDS, problems)
    attempts = _whole(params.get("max_attempts"), "max_attempts", 1, ATTEMPTS_MAX, problems)
    steps, threshold = params.get("steps") or None, params.get("refailure_threshold")
    try:
        steps, threshold = progression_check(steps=steps, refailure_threshold=threshold)
    except ValidationError as exc:
        problems.extend(exc.messages)
        steps, threshold = [], 0.0
    return {
        "queue": queue or "",
        "group": group,
        "delay_seconds": delay,
        "max_attempts": attempts,
        "steps": steps,
        "refailure_threshold": threshold,
    }


_CHECKS = {ARCHIVE: _archive, REDIRECT: _redirect, AUTO_RETRY: _auto_retry}


def rule_fields(*, name, kind, comment, params):
    """The model's fields of a rule, its parameters `params` ({name: value}) checked for `kind`:
    ValidationError listing every problem otherwise."""
    problems = []
    if not isinstance(name, str) or not _NAME.match(name):
        problems.append(
            f"the name is 1 to {NAME_MAX} letters, digits, dots, dashes or underscores, "
            "starting with a letter or a digit"
        )
    if kind not in _CHECKS:
        raise ValidationError(
            [*problems, f"the kind is one of {', '.join(k for k, _ in KINDS)}, not {kind!r}"]
        )
    if not isinstance(comment, str) or not comment.strip():
        problems.append("a rule says why: the comment is required")
    elif len(comment) > COMMENT_MAX:
        problems.append(f"the comment is at most {COMMENT_MAX:,} characters")
    given = {k for k, v in params.items() if v not in (None, "", [])}
    foreign = sorted(given - set(PARAMETERS[kind]))
    if foreign:
        problems.append(f"a {kind} rule does not take {', '.join(foreign)}")
    fields = _CHECKS[kind](params, problems)
    if problems:
        raise ValidationError(problems)
    return {"name": name, "kind": kind, "comment": comment.strip(), **fields}


def rule_parameters(rule):
    """{name: value} of the parameters `rule` takes, as a file or the API gives them."""
    return {name: getattr(rule, name) for name in PARAMETERS[rule.kind]}
