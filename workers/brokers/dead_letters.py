"""Dead-letter records in message headers, read into one shape whatever wrote them.

A broker or framework that gives up on a message often writes down why: RabbitMQ's `x-death`,
Kafka Connect's `__connect.errors.*`, Kafka Streams' `__streams.errors.*` (KIP-1034), Spring
Kafka's `kafka_dlt-*`. Brokers that write nothing down (NATS JetStream, Redis Streams) get their
record from Antidote's own drain, which puts the origin on the message in headers. Each format is
read by its own module in workers.brokers.formats; `dead_letter_of` picks the one the headers
carry and says, in the same fields for every kind, where the message came from and why it died.

Pure Python: no Django, no broker client.
"""

from workers.brokers.formats import kip1034, nats_origin, redis_origin, spring, x_death
from workers.brokers.formats.common import DeadLetter
from workers.brokers.registry import KIND_TITLES

__all__ = [
    "KIND_NAMES",
    "DeadLetter",
    "dead_letter_details",
    "dead_letter_of",
    "latest_death",
    "record_name",
]

_KAFKA_TITLES = {
    kip1034.KAFKA_CONNECT: "Kafka Connect",
    kip1034.KAFKA_STREAMS: "Kafka Streams",
    spring.KIND: "Spring Kafka",
}
# The order the API's documents list them in (RabbitMQ's and Kafka's records before the sources
# that came later): a reordering would change the published schema for nothing.
KIND_NAMES = {
    kind: {**KIND_TITLES, **_KAFKA_TITLES}[kind]
    for kind in ("rabbitmq", *_KAFKA_TITLES, *(k for k in KIND_TITLES if k != "rabbitmq"))
}

# The freshest record first: what Antidote's own NATS or Redis drain wrote when it took the
# message off that broker (whatever records the message carried from an earlier life are older),
# then RabbitMQ's (the broker that last held a message writes its record when it dead-letters
# it), then Kafka Connect's, Kafka Streams' and Spring's.
_FORMATS = (
    (nats_origin.carries, nats_origin.read),
    (redis_origin.carries, redis_origin.read),
    (x_death.carries, x_death.read),
    (kip1034.carries_connect, kip1034.read_connect),
    (kip1034.carries_streams, kip1034.read_streams),
    (spring.carries, spring.read),
)


def record_name(name):
    """Whether a header of this name (any case) is part of a dead-letter record some format
    reads: where a message died, which a redrive reads to send it back (RabbitMQ's sink follows
    `x-death`), so nothing but the broker that wrote it may set it (R18)."""
    found = {name.lower(): ""}
    return any(carries(found) for carries, _ in _FORMATS)


def dead_letter_of(headers):
    """The dead-letter record the headers carry, or None when they carry none; when several are
    present, the freshest wins (_FORMATS)."""
    if not headers:
        return None
    found = _lowercased(headers)
    for carries, read in _FORMATS:
        if carries(found):
            return read(found)
    return None


def latest_death(headers):
    """(queue, exchange, routing keys) of a RabbitMQ message's latest death, as `dead_letter_of`
    reads them; (None, None, ()) without a RabbitMQ record.

    What a redrive needs for every message it publishes. `dead_letter_of` also writes the record
    out for people, cleaning every character, which would be most of a redrive's own work: so a
    well-formed x-death (nearly all) is read by its parser alone, anything else by
    `dead_letter_of`."""
    latest = x_death.latest_death(headers)
    if latest is not None:
        return latest
    record = dead_letter_of(headers)
    if record is None:
        return None, None, ()
    return record.original_queue, record.original_exchange, record.original_routing_keys


def dead_letter_details(headers):
    """The "Dead letter" section of a message page: ((label, value), ...), or () when none."""
    dl = dead_letter_of(headers)
    if dl is None:
        return ()
    summary = (
        ("Kind", KIND_NAMES[dl.kind]),
        ("Origin", dl.origin),
        ("Exception type", dl.exception_type),
        ("Reason", dl.reason),
    )
    return summary + dl.details


def _lowercased(headers):
    # HTTP and some clients lowercase header names. Where two spellings of one name both appear,
    # the first one kept, so the answer does not depend on which a client wrote last.
    found = {}
    for name, value in headers.items():
        if value is None:
            continue
        found.setdefault(str(name).lower(), value if isinstance(value, str) else str(value))
    return found
