"""What an edit of one message's headers may change (R13, R18).

A reprocess of one message may carry its headers edited with its body: the new version carries
them, the original is kept. Every header may be edited but those the product reads, which an
edit keeps as they are:
- the product's own (workers.engine.own_headers: `antidote-`, and what a broker source recorded
  of where it drained the message, `amqp-`, `nats-`, `redis-`, which the sinks send it back by);
- a dead-letter record (`x-death`, Kafka's and Spring's, workers.brokers.dead_letters): where
  the message died, which RabbitMQ's redrive follows to send it back;
- the names its queue locks (Queue.locked_headers), and those of the queue it is sent to: what
  their consumers trust, a tenant or a signature.
So an edit never chooses where a message goes (that is the request's own target, approved by a
second person), and a locked header is never changed by hand. The edit is given as the headers
the person wants; a kept header in it must be as it is (or absent: it is kept anyway).
"""

import json
from dataclasses import dataclass

from django.core.exceptions import ValidationError

from console.ingest.records import RecordRefused, headers_limit_check
from console.queues.models import Queue
from workers.brokers.dead_letters import record_name
from workers.engine.own_headers import is_product_name

PRODUCT, RECORD, LOCKED = "product", "record", "locked"
# Why a header is kept, for the form and the refusals.
KEPT_WORDS = {
    PRODUCT: "the product's own (where the message came from, as its source recorded it)",
    RECORD: "the broker's record of where the message died, which a redrive follows",
    LOCKED: "locked by its queue",
}


def locked_names(queues):
    """The header names (lower case) the queues named lock."""
    names = set()
    for locked in Queue.objects.filter(name__in=[q for q in queues if q]).values_list(
        "locked_headers", flat=True
    ):
        names.update(name.lower() for name in locked or ())
    return frozenset(names)


def header_kept(name, locked):
    """Why an edit keeps the header `name` as it is (PRODUCT, RECORD or LOCKED); "" when it may
    be edited. `locked`: the lower-case names its queues lock."""
    lowered = name.lower()
    if is_product_name(lowered):
        return PRODUCT
    if record_name(lowered):
        return RECORD
    if lowered in locked:
        return LOCKED
    return ""


def headers_parse(text):
    """Stored headers (JSON text, None for none) as a dict; ValidationError when they are not
    a JSON object (then they cannot be edited, only kept)."""
    try:
        headers = json.loads(text or "{}")
    except (ValueError, RecursionError):
        headers = None
    if not isinstance(headers, dict):
        raise ValidationError("the message's stored headers are not a JSON object: keep them")
    return headers


@dataclass(frozen=True)
class Editable:
    """A message's headers as the edit form shows them: those it may edit, and those it keeps
    as (name, value, why)."""

    editable: dict
    kept: list


def headers_editable(current, locked):
    editable, kept = {}, []
    for name, value in current.items():
        why = header_kept(name, locked)
        if why:
            kept.append((name, value, KEPT_WORDS[why]))
        else:
            editable[name] = value
    return Editable(editable, kept)


def _text(value):
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def headers_edited(*, current, desired, locked):
    """The headers the new version carries when a person asks for `desired` (a dict) on a
    message with `current`: every kept header as it is, the others as asked. None when that is
    what it has. ValidationError naming each header the edit may not change, or the limit the
    result is over (the header limits of ingest)."""
    if not isinstance(desired, dict) or not all(
        isinstance(k, str) and k and isinstance(v, str) and _text(k) and _text(v)
        for k, v in desired.items()
    ):
        raise ValidationError("the headers are an object of names to text values")
    refused = []
    for name, value in desired.items():
        why = header_kept(name, locked)
        if why and current.get(name) != value:
            refused.append(
                f"the header {name[:100]!r} is {KEPT_WORDS[why]}: an edit keeps it as it is"
            )
    if refused:
        raise ValidationError(refused)
    kept = {name: value for name, value in current.items() if header_kept(name, locked)}
    final = {**kept, **{k: v for k, v in desired.items() if not header_kept(k, locked)}}
    try:
        headers_limit_check(final, None)
    except RecordRefused as exc:
        raise ValidationError(f"the edited headers are refused: {exc.message}") from None
    return None if final == current else final
