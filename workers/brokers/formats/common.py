"""The one shape of a dead-letter record, and the care every format takes with untrusted text.

Header values come from whoever published the message, so nothing here trusts them: bad records
give a plain explanation instead of an exception, long values are cut, nothing is evaluated.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime

REASON_LIMIT = 2000
STACK_LIMIT = 8000
VALUE_LIMIT = 2000
# RabbitMQ queue names stop at 255 bytes and Kafka topic names at 249 characters: anything longer
# in a sentence is noise.
NAME_LIMIT = 255

# Kafka partitions are ints and offsets and timestamps longs: 19 digits is enough, and int() of a
# megabyte of digits is not work to do for a header.
DECIMAL = re.compile(r"-?[0-9]{1,19}")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class DeadLetter:
    kind: str
    origin: str
    exception_type: str
    reason: str
    stack: str | None
    details: tuple
    # RabbitMQ only (None otherwise): where a redrive publishes the message back to.
    original_queue: str | None = None
    original_exchange: str | None = None
    original_routing_keys: tuple = ()
    # How many times the broker delivered or dead-lettered it, when it says.
    count: int | None = None


def exception_type_of(fqcn, default):
    fqcn = one_line(fqcn or "", NAME_LIMIT).strip()
    return fqcn or default


def number_text(text):
    """Decimal text as a plain number; anything else (Spring's binary, base64) as given."""
    stripped = text.strip()
    if DECIMAL.fullmatch(stripped):
        return str(int(stripped))
    return shown(text)


def count_of(text):
    """A delivery count: a whole number >= 0, or None when the text is not one."""
    if text is None:
        return None
    stripped = text.strip()
    if stripped.isascii() and stripped.isdigit() and len(stripped) <= 18:
        return int(stripped)
    return None


def how_often(count):
    return "once" if count == 1 else f"{count} times"


def stack_cut(text):
    # Python tracebacks put the innermost frame last, so a long stack keeps its end.
    if text is None:
        return None
    if len(text) <= STACK_LIMIT:
        return text
    return "…" + text[-(STACK_LIMIT - 1) :]


def cut(text, limit):
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text, limit):
    # Newlines, control and bidi characters would let a header forge extra lines or reorder what
    # a person reads: each becomes a space.
    text = cut(text, limit)
    if text.isprintable():  # the common case, without a Python step per character
        return text
    return "".join(c if c.isprintable() else " " for c in text)


def shown(text):
    return one_line(text, VALUE_LIMIT)


def quoted(name):
    return f"'{one_line(name, NAME_LIMIT)}'"


def given_details(h, labels, *, numbers=()):
    """((label, value), ...) of the headers among `labels` ((name, label), ...) that have a
    value, each cleaned; those in `numbers` read as numbers."""
    details = []
    for name, label in labels:
        if h.get(name):
            value = number_text(h[name]) if name in numbers else h[name]
            details.append((label, shown(value)))
    return details


def kafka_dead_letter(kind, position, *, fqcn, default_type, reason, stack, details):
    """The record of a Kafka framework: `position` is (topic, partition, offset)."""
    return DeadLetter(
        kind=kind,
        origin=kafka_origin(*position),
        exception_type=exception_type_of(fqcn, default_type),
        reason=cut(reason, REASON_LIMIT),
        stack=stack_cut(stack),
        details=tuple(details),
    )


def kafka_origin(topic, partition, offset):
    origin = f"Kafka topic {quoted(topic)}" if topic is not None else "Kafka (topic unknown)"
    if partition is not None:
        origin += f" partition {number_text(partition)}"
    if offset is not None:
        origin += f" offset {number_text(offset)}"
    return one_line(origin, VALUE_LIMIT)


def kafka_position_details(topic, partition, offset):
    details = []
    if topic is not None:
        details.append(("Topic", shown(topic)))
    if partition is not None:
        details.append(("Partition", number_text(partition)))
    if offset is not None:
        details.append(("Offset", number_text(offset)))
    return details
