"""The header names that belong to the product (R18: what a producer wrote never steers it).

A message's headers are the producer's data, with one exception: the names the product writes
about a message itself. Those are the `antidote-` namespace and the records a broker source
writes of where it drained a message from (`amqp-`, `nats-`, `redis-`: the properties a redrive
to RabbitMQ publishes with, the subject or stream a redrive goes back to). A sink reads the
records to send a message back where it came from, so a producer must never be able to write
one: ingest sets aside every name of these namespaces that arrives with a message, from any
route (the API, the inbox, `manage.py ingest`, every broker source), before the source's own
records are added (console.ingest.services).

Set aside, not refused and not dropped: the header is kept, under `x-foreign-<its name>`, so a
person inspecting the message sees what the producer sent, and a message is never lost for a
header (a dead letter drained from a broker cannot be sent back to its producer to fix).

The request's own redrive target is not a header at all: it is the `redrive_target` column of
the message's version that the request wrote (workers.lake.schema), which nothing a producer
sends can reach.

Pure Python: no Django.
"""

OWN_PREFIX = "antidote-"
# What the broker sources write about a message (workers.brokers.<broker>.record): where it
# was drained from, its properties as received.
RECORD_PREFIXES = ("amqp-", "nats-", "redis-")
PRODUCT_PREFIXES = (OWN_PREFIX, *RECORD_PREFIXES)
# Where a producer's header of those names is kept instead: a name no writer of the product uses.
FOREIGN_PREFIX = "x-foreign-"
# The product's name for the source that drained a message, on every broker's records.
SOURCE_HEADER = "antidote-source"


def is_product_name(name):
    """Whether header `name` (in any case) is in the product's namespaces."""
    return name.lower().startswith(PRODUCT_PREFIXES)


def foreign_name(name, taken):
    """The name a producer's header `name` is kept under: FOREIGN_PREFIX + name, numbered
    (`-2`, `-3`...) when the message already holds that name."""
    moved = FOREIGN_PREFIX + name
    n = 1
    while moved in taken:
        n += 1
        moved = f"{FOREIGN_PREFIX}{name}-{n}"
    return moved


def set_aside(headers):
    """`headers` (a dict) with each name of the product's namespaces renamed to its foreign
    name, in their order; the same dict when none is, so the common case costs one pass."""
    if not any(is_product_name(name) for name in headers):
        return headers
    kept = {name: value for name, value in headers.items() if not is_product_name(name)}
    taken = set(headers)
    out = {}
    for name, value in headers.items():
        if name in kept:
            out[name] = value
        else:
            moved = foreign_name(name, taken)
            taken.add(moved)
            out[moved] = value
    return out


def headers_stored(headers, own=None):
    """The headers a message is stored with: the producer's `headers`, names of ours set aside,
    then `own`, the records a broker source wrote of it (names of ours only)."""
    headers = set_aside(headers)
    return {**headers, **own} if own else headers
