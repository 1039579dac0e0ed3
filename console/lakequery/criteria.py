"""A lake query's criteria: checked and stored as the API and the form send them, and turned into
what the Spark job (workers.jobs.lake_query) takes."""

import re
from datetime import UTC, datetime

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from workers.engine.states import STATES

# Longest text of each text criterion (the index's column lengths for the metadata ones).
TEXT_CRITERIA = {
    "sender": 300,
    "conversation_id": 200,
    "message_id_prefix": 200,
    "body_contains": 1000,
    "body_regex": 1000,
    "json_path": 200,
    "json_equals": 1000,
    "header_name": 200,
    "header_value": 1000,
}
LIST_CRITERIA = ("queues", "states")
TIME_CRITERIA = ("enqueued_from", "enqueued_to")
CRITERIA = (*LIST_CRITERIA, *TIME_CRITERIA, *TEXT_CRITERIA)
BODY_CRITERIA = ("body_contains", "body_regex", "json_path", "json_equals")
MAX_QUEUES = 100
QUEUE_NAME_MAX = 100
# $.a.b, $.a[0].b, $[2]: a name step is letters, digits, '_' or '-' (what Spark's path parser
# reads up to the next '.' or '['), an index step a number.
JSON_PATH = re.compile(r"\$(?:\.[A-Za-z0-9_-]+|\[[0-9]+\])+")


def lake_query_criteria_clean(criteria):
    """The criteria as stored: checked, empty ones left out, times as ISO text in UTC.
    ValidationError says what is wrong with them."""
    if not isinstance(criteria, dict):
        raise ValidationError("the criteria are an object of criterion names to values")
    unknown = sorted(set(criteria) - set(CRITERIA))
    if unknown:
        raise ValidationError(
            f"unknown criterion {', '.join(map(repr, unknown))}; "
            f"a lake query takes {', '.join(CRITERIA)}"
        )
    given = {k: v for k, v in criteria.items() if v not in (None, "", [], ())}
    if not given:
        raise ValidationError("give at least one criterion: a lake query never lists everything")
    clean = {}
    for name in LIST_CRITERIA:
        if name in given:
            clean[name] = _names(name, given[name])
    for name in TIME_CRITERIA:
        if name in given:
            clean[name] = _time(name, given[name]).isoformat()
    for name, longest in TEXT_CRITERIA.items():
        if name in given:
            value = given[name]
            if not isinstance(value, str):
                raise ValidationError(f"{name} must be text")
            if len(value) > longest:
                raise ValidationError(f"{name} is at most {longest} characters")
            clean[name] = _text(name, value)

    bad = set(clean.get("states", ())) - set(STATES)
    if bad:
        raise ValidationError(
            f"unknown state {', '.join(map(repr, sorted(bad)))}; the states are {', '.join(STATES)}"
        )
    if len(clean.get("queues", ())) > MAX_QUEUES:
        raise ValidationError(f"name at most {MAX_QUEUES} queues")
    if any(len(q) > QUEUE_NAME_MAX for q in clean.get("queues", ())):
        raise ValidationError(f"a queue name is at most {QUEUE_NAME_MAX} characters")
    start, end = clean.get("enqueued_from"), clean.get("enqueued_to")
    if start and end and _time("", start) >= _time("", end):
        raise ValidationError("enqueued_from must be before enqueued_to")
    if "body_regex" in clean:
        try:
            re.compile(clean["body_regex"])
        except re.error as exc:
            raise ValidationError(f"body_regex is not a valid regular expression: {exc}") from None
    if ("json_path" in clean) != ("json_equals" in clean):
        raise ValidationError("json_path and json_equals go together: the value at the path equals")
    if "json_path" in clean and not JSON_PATH.fullmatch(clean["json_path"]):
        raise ValidationError(
            "json_path is a path such as $.order.id or $.items[0].sku "
            "(names of letters, digits, '_' and '-'; indexes in brackets)"
        )
    if "header_value" in clean and "header_name" not in clean:
        raise ValidationError("header_value needs header_name: the header whose value contains it")
    return clean


def _names(name, value):
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        raise ValidationError(f"{name} must be a list of names")
    for item in value:
        _text(name, item)
    return sorted(set(value))


def _text(name, value):
    """Text a database can store: UTF-8 (a JSON string may hold a lone surrogate) and no NUL
    (PostgreSQL refuses it)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{name} is not valid Unicode text") from None
    if "\x00" in value:
        raise ValidationError(f"{name} must not contain a NUL character")
    return value


def _time(name, value):
    if isinstance(value, str):
        parsed = parse_datetime(value.strip())
        if parsed is None:
            raise ValidationError(f"{name} must be a date and time such as 2026-03-01T12:00:00Z")
        value = parsed
    if not isinstance(value, datetime):
        raise ValidationError(f"{name} must be a date and time such as 2026-03-01T12:00:00Z")
    try:
        if timezone.is_naive(value):
            value = timezone.make_aware(value, UTC)
        return value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValidationError(f"{name} is out of range") from None


def criteria_read_bodies(criteria):
    return any(name in criteria for name in BODY_CRITERIA)


def job_criteria(criteria):
    """Stored criteria as the Spark job takes them."""
    from workers.jobs.lake_query import Criteria

    values = dict(criteria)
    for name in LIST_CRITERIA:
        values[name] = tuple(values.get(name, ()))
    for name in TIME_CRITERIA:
        if values.get(name):
            values[name] = _time(name, values[name])
    return Criteria(**values)
