"""RabbitMQ's dead-letter record: the `x-death` header (a list of deaths, most recent first) and
the `x-first-death-*` / `x-last-death-*` summaries beside it."""

import json

from workers.brokers.formats.common import (
    REASON_LIMIT,
    VALUE_LIMIT,
    DeadLetter,
    cut,
    one_line,
    quoted,
    shown,
)
from workers.brokers.registry import RABBITMQ

KIND = RABBITMQ.kind
MALFORMED_DEATH_RECORD = "amqp.malformed-death-record"
UNKNOWN_DEATH_REASON = "amqp.unknown"
# A message that went round a retry loop many times still reads well with this many earlier deaths.
EARLIER_DEATHS_SHOWN = 10

# What RabbitMQ means by each reason, for a person; `{queue}` is "queue 'orders'".
_RABBITMQ_REASONS = {
    "rejected": "rejected by a consumer of {queue}",
    "expired": "expired in {queue}",
    "maxlen": "dropped from {queue}: it was full (maxlen)",
    "delivery_limit": "delivery limit reached in {queue}",
}


def carries(found):
    """Whether lower-cased headers hold a RabbitMQ record."""
    return any(
        name == "x-death" or name.startswith(("x-first-death-", "x-last-death-")) for name in found
    )


def latest_death(headers):
    """(queue, exchange, routing keys) of a well-formed x-death's latest death, or None when the
    headers have no x-death that reads."""
    for name, value in headers.items():
        # dead_letter_of's reading of header names: any case, the first spelling with a value.
        if value is not None and name.lower() == "x-death":
            try:
                latest = _deaths(value if isinstance(value, str) else str(value))[0]
            except _Malformed:
                return None
            return latest["queue"], latest["exchange"], tuple(latest["routing-keys"])
    return None


class _Malformed(Exception):
    """The x-death header cannot be read; the message says why, for a person."""


def read(h):
    given = _rabbitmq_given_headers(h)
    if "x-death" in h:
        try:
            deaths = _deaths(h["x-death"])
        except _Malformed as problem:
            return _rabbitmq_without_deaths(h, given, problem=str(problem))
        return _rabbitmq_from_deaths(deaths, given)
    return _rabbitmq_without_deaths(h, given)


def _deaths(text):
    """x-death as a list of checked entries, most recent first."""
    try:
        deaths = json.loads(text)
    except ValueError as exc:
        raise _Malformed(f"the x-death header is not valid JSON: {cut(str(exc), 200)}") from None
    except RecursionError:
        raise _Malformed("the x-death header is not valid JSON: it is nested too deeply") from None
    if not isinstance(deaths, list):
        raise _Malformed(f"the x-death header is not a list (it is {_json_type(deaths)})")
    if not deaths:
        raise _Malformed("the x-death header is an empty list")
    for number, death in enumerate(deaths, start=1):
        _check_death(number, death)
    return deaths


def _check_death(number, death):
    entry = f"entry {number} of the x-death header"
    if not isinstance(death, dict):
        raise _Malformed(f"{entry} is not an object (it is {_json_type(death)})")
    for key in ("reason", "queue", "exchange"):
        if key not in death:
            raise _Malformed(f"{entry} has no '{key}'")
        if not isinstance(death[key], str):
            raise _Malformed(f"{entry} has a '{key}' that is not text")
    if "count" not in death:
        raise _Malformed(f"{entry} has no 'count'")
    count = death["count"]
    # JSON true is a Python int: a count it is not.
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise _Malformed(f"{entry} has a 'count' that is not a positive whole number")
    if "routing-keys" not in death:
        raise _Malformed(f"{entry} has no 'routing-keys'")
    keys = death["routing-keys"]
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        raise _Malformed(f"{entry} has 'routing-keys' that are not a list of text")
    if "time" in death and not isinstance(death["time"], str):
        raise _Malformed(f"{entry} has a 'time' that is not text")


def _rabbitmq_from_deaths(deaths, given):
    latest = deaths[0]
    queue, exchange, keys = latest["queue"], latest["exchange"], tuple(latest["routing-keys"])
    count = latest["count"]
    exception_type, reason = _rabbitmq_reason(latest["reason"], queue, count)
    details = _target_details(queue, exchange, keys)
    details.append(("Death count", str(count)))
    if "time" in latest:
        details.append(("Died at", shown(latest["time"])))
    if "original-expiration" in latest:
        details.append(("Original expiration", shown(str(latest["original-expiration"]))))
    if len(deaths) > 1:
        details.append(("Total deaths", str(sum(death["count"] for death in deaths))))
        earlier = deaths[1:]
        for number, death in enumerate(earlier[:EARLIER_DEATHS_SHOWN], start=1):
            details.append((f"Earlier death {number}", _earlier_death(death)))
        if len(earlier) > EARLIER_DEATHS_SHOWN:
            details.append(("Earlier deaths not shown", str(len(earlier) - EARLIER_DEATHS_SHOWN)))
    return DeadLetter(
        kind=KIND,
        origin=_rabbitmq_origin(queue, exchange, keys),
        exception_type=exception_type,
        reason=reason,
        stack=None,
        details=tuple(details + given),
        original_queue=queue,
        original_exchange=exchange,
        original_routing_keys=keys,
        count=count,
    )


def _rabbitmq_without_deaths(h, given, *, problem=None):
    # Without a readable x-death, the summary headers name the target. The last death is the one a
    # redrive undoes, so it is preferred where the broker is new enough to write it.
    queue = _either(h, "x-last-death-queue", "x-first-death-queue")
    exchange = _either(h, "x-last-death-exchange", "x-first-death-exchange")
    details = _target_details(queue, exchange, ())
    if problem is None:
        exception_type, reason = _rabbitmq_reason(
            _either(h, "x-last-death-reason", "x-first-death-reason"), queue, None
        )
    else:
        exception_type, reason = MALFORMED_DEATH_RECORD, problem
        details.append(("Death record (unreadable)", shown(h["x-death"])))
    return DeadLetter(
        kind=KIND,
        origin=_rabbitmq_origin(queue, exchange, ()),
        exception_type=exception_type,
        reason=cut(reason, REASON_LIMIT),
        stack=None,
        details=tuple(details + given),
        original_queue=queue,
        original_exchange=exchange,
    )


def _rabbitmq_reason(reason, queue, count):
    where = f"queue {quoted(queue)}" if queue is not None else "an unknown queue"
    if reason in _RABBITMQ_REASONS:
        exception_type, sentence = f"amqp.{reason}", _RABBITMQ_REASONS[reason].format(queue=where)
    elif reason is None:
        exception_type, sentence = UNKNOWN_DEATH_REASON, f"dead-lettered from {where}"
    else:
        # A reason this code does not know (a newer broker, or made up): said, never trusted as
        # a type name.
        exception_type = UNKNOWN_DEATH_REASON
        sentence = f"dead-lettered from {where} for reason {quoted(reason)}"
    if count is not None and count > 1:
        sentence += f"; dead-lettered {count} times"
    return exception_type, cut(sentence, REASON_LIMIT)


def _rabbitmq_origin(queue, exchange, keys):
    origin = f"RabbitMQ queue {quoted(queue)}" if queue is not None else "RabbitMQ (queue unknown)"
    route = []
    if exchange is not None:
        route.append(_exchange_name(exchange))
    if keys:
        label = "routing key" if len(keys) == 1 else "routing keys"
        route.append(f"{label} " + ", ".join(quoted(key) for key in keys))
    if route:
        origin += f" ({', '.join(route)})"
    return one_line(origin, VALUE_LIMIT)


def _target_details(queue, exchange, keys):
    details = []
    if queue is not None:
        details.append(("Original queue", shown(queue)))
    if exchange is not None:
        details.append(("Exchange", shown(exchange) if exchange else "the default exchange"))
    if keys:
        details.append(("Routing keys", shown(", ".join(keys))))
    return details


def _earlier_death(death):
    _, sentence = _rabbitmq_reason(death["reason"], death["queue"], None)
    sentence += f" ({_exchange_name(death['exchange'])}"
    if death["routing-keys"]:
        sentence += ", routing keys " + ", ".join(quoted(key) for key in death["routing-keys"])
    sentence += ")"
    sentence += "; once" if death["count"] == 1 else f"; {death['count']} times"
    if "time" in death:
        sentence += f"; last at {death['time']}"
    return shown(sentence)


def _rabbitmq_given_headers(h):
    labels = (
        ("x-first-death-reason", "First death reason"),
        ("x-first-death-queue", "First death queue"),
        ("x-first-death-exchange", "First death exchange"),
        ("x-last-death-reason", "Last death reason"),
        ("x-last-death-queue", "Last death queue"),
        ("x-last-death-exchange", "Last death exchange"),
    )
    given = []
    for name, label in labels:
        if name in h:
            value = h[name]
            if name.endswith("exchange") and value == "":
                given.append((label, "the default exchange"))
            else:
                given.append((label, shown(value)))
    return given


def _exchange_name(exchange):
    return f"exchange {quoted(exchange)}" if exchange else "the default exchange"


def _either(h, first, second):
    return h[first] if first in h else h.get(second)


def _json_type(value):
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):
        return "true or false"
    if value is None:
        return "null"
    return "a number"
