"""Dead-letter records in message headers, read into one shape whatever wrote them.

A broker or framework that gives up on a message often writes down why: RabbitMQ's `x-death`,
Kafka Connect's `__connect.errors.*`, Kafka Streams' `__streams.errors.*` (KIP-1034), Spring
Kafka's `kafka_dlt-*`. Brokers that write nothing down (NATS JetStream, Redis Streams) get their
record from Antidote's own drain, which puts the origin on the message in headers named here
(NATS_HEADERS, REDIS_HEADERS). `dead_letter_of` recognises all of these and says, in the same
fields for every kind, where the message came from and why it died.

Header values come from whoever published the message, so nothing here trusts them: bad records
give a plain explanation instead of an exception, long values are cut, nothing is evaluated.
Pure Python: no Django, no broker client.
"""

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

RABBITMQ = "rabbitmq"
KAFKA_CONNECT = "kafka-connect"
KAFKA_STREAMS = "kafka-streams"
SPRING_KAFKA = "spring-kafka"
# The connector kinds' names (workers.brokers.connector.CONNECTOR_MODULES).
NATS = "nats"
REDIS = "redis"

KIND_NAMES = {
    RABBITMQ: "RabbitMQ",
    KAFKA_CONNECT: "Kafka Connect",
    KAFKA_STREAMS: "Kafka Streams",
    SPRING_KAFKA: "Spring Kafka",
    NATS: "NATS JetStream",
    REDIS: "Redis Streams",
}

MALFORMED_DEATH_RECORD = "amqp.malformed-death-record"
UNKNOWN_DEATH_REASON = "amqp.unknown"
KAFKA_CONNECT_ERROR = "kafka-connect.error"
KAFKA_STREAMS_ERROR = "kafka-streams.error"
SPRING_KAFKA_ERROR = "spring-kafka.error"

# What the NATS source writes on a message it drained (workers.brokers.nats_message), in lower
# case: NATS's own headers are spelled `Nats-...`. The advisory is what JetStream published when
# a consumer gave up on the message: its consumer's max_deliver reached, or an AckTerm.
NATS_SUBJECT = "nats-subject"
NATS_STREAM = "nats-stream"
NATS_SEQUENCE = "nats-sequence"
NATS_STORED_AT = "nats-stored-at"
NATS_CONSUMER = "nats-consumer"
NATS_DELIVERIES = "nats-deliveries"
NATS_ADVISORY = "nats-advisory"  # NATS_MAX_DELIVER or NATS_TERMINATED
NATS_TERMINATED_REASON = "nats-terminated-reason"  # the consumer's own reason, with AckTerm
NATS_REASON = "nats-reason"  # the drain's sentence for the failure's reason
NATS_MAX_DELIVER = "max_deliver"
NATS_TERMINATED = "terminated"
NATS_HEADERS = (
    NATS_SUBJECT,
    NATS_STREAM,
    NATS_SEQUENCE,
    NATS_STORED_AT,
    NATS_CONSUMER,
    NATS_DELIVERIES,
    NATS_ADVISORY,
    NATS_TERMINATED_REASON,
    NATS_REASON,
)
NATS_EXCEPTION_TYPES = {NATS_MAX_DELIVER: "nats.max_deliver", NATS_TERMINATED: "nats.terminated"}
NATS_UNKNOWN_ADVISORY = "nats.unknown"

# What the Redis Streams source writes on an entry it claimed (workers.brokers.redis_message).
# Redis records no reason: an entry is a dead letter because its group delivered it again and
# again and nobody acknowledged it.
REDIS_STREAM = "redis-stream"
REDIS_ENTRY_ID = "redis-entry-id"
REDIS_GROUP = "redis-group"
REDIS_CONSUMER = "redis-consumer"  # "" when not known (claimed before a restart)
REDIS_DELIVERIES = "redis-deliveries"
REDIS_IDLE_MS = "redis-idle-ms"
REDIS_HEADERS = (
    REDIS_STREAM,
    REDIS_ENTRY_ID,
    REDIS_GROUP,
    REDIS_CONSUMER,
    REDIS_DELIVERIES,
    REDIS_IDLE_MS,
)
REDIS_UNACKNOWLEDGED = "redis.unacknowledged"

REASON_LIMIT = 2000
STACK_LIMIT = 8000
VALUE_LIMIT = 2000
# RabbitMQ queue names stop at 255 bytes and Kafka topic names at 249 characters: anything longer
# in a sentence is noise.
NAME_LIMIT = 255
# A message that went round a retry loop many times still reads well with this many earlier deaths.
EARLIER_DEATHS_SHOWN = 10

# What RabbitMQ means by each reason, for a person; `{queue}` is "queue 'orders'".
_RABBITMQ_REASONS = {
    "rejected": "rejected by a consumer of {queue}",
    "expired": "expired in {queue}",
    "maxlen": "dropped from {queue}: it was full (maxlen)",
    "delivery_limit": "delivery limit reached in {queue}",
}

_CONNECT = "__connect.errors."
_STREAMS = "__streams.errors."
_SPRING = "kafka_dlt-"
# What Java's Throwable.toString() starts with: the exception's class name, then ": message".
_JAVA_CLASS = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
# Kafka partitions are ints and offsets and timestamps longs: 19 digits is enough, and int() of a
# megabyte of digits is not work to do for a header.
_DECIMAL = re.compile(r"-?[0-9]{1,19}")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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


def dead_letter_of(headers):
    """The dead-letter record the headers carry, or None when they carry none.

    When several are present, the freshest wins: first what Antidote's own NATS or Redis drain
    wrote when it took the message off that broker (whatever records the message carried from
    an earlier life are older), then RabbitMQ's (the broker that last held a message writes its
    record when it dead-letters it), then Kafka Connect's, Kafka Streams' and Spring's."""
    if not headers:
        return None
    found = _lowercased(headers)
    if NATS_ADVISORY in found:
        return _nats(found)
    if REDIS_STREAM in found and REDIS_ENTRY_ID in found:
        return _redis(found)
    if any(
        name == "x-death" or name.startswith(("x-first-death-", "x-last-death-")) for name in found
    ):
        return _rabbitmq(found)
    if any(name.startswith(_CONNECT) for name in found):
        return _kafka_connect(found)
    if any(name.startswith(_STREAMS) for name in found):
        return _kafka_streams(found)
    if any(name.startswith(_SPRING) for name in found):
        return _spring_kafka(found)
    return None


def latest_death(headers):
    """(queue, exchange, routing keys) of a RabbitMQ message's latest death, as `dead_letter_of`
    reads them; (None, None, ()) without a RabbitMQ record.

    What a redrive needs for every message it publishes. `dead_letter_of` also writes the record
    out for people, cleaning every character, which would be most of a redrive's own work: so a
    well-formed x-death (nearly all) is read by its parser alone, anything else by
    `dead_letter_of`."""
    for name, value in headers.items():
        # dead_letter_of's reading of header names: any case, the first spelling with a value.
        if value is not None and name.lower() == "x-death":
            try:
                latest = _deaths(value if isinstance(value, str) else str(value))[0]
            except _Malformed:
                break
            return latest["queue"], latest["exchange"], tuple(latest["routing-keys"])
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


# RabbitMQ ------------------------------------------------------------------------------------


class _Malformed(Exception):
    """The x-death header cannot be read; the message says why, for a person."""


def _rabbitmq(h):
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
        raise _Malformed(f"the x-death header is not valid JSON: {_head(str(exc), 200)}") from None
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
        details.append(("Died at", _value(latest["time"])))
    if "original-expiration" in latest:
        details.append(("Original expiration", _value(str(latest["original-expiration"]))))
    if len(deaths) > 1:
        details.append(("Total deaths", str(sum(death["count"] for death in deaths))))
        earlier = deaths[1:]
        for number, death in enumerate(earlier[:EARLIER_DEATHS_SHOWN], start=1):
            details.append((f"Earlier death {number}", _earlier_death(death)))
        if len(earlier) > EARLIER_DEATHS_SHOWN:
            details.append(("Earlier deaths not shown", str(len(earlier) - EARLIER_DEATHS_SHOWN)))
    return DeadLetter(
        kind=RABBITMQ,
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
        details.append(("Death record (unreadable)", _value(h["x-death"])))
    return DeadLetter(
        kind=RABBITMQ,
        origin=_rabbitmq_origin(queue, exchange, ()),
        exception_type=exception_type,
        reason=_head(reason, REASON_LIMIT),
        stack=None,
        details=tuple(details + given),
        original_queue=queue,
        original_exchange=exchange,
    )


def _rabbitmq_reason(reason, queue, count):
    where = f"queue {_quoted(queue)}" if queue is not None else "an unknown queue"
    if reason in _RABBITMQ_REASONS:
        exception_type, sentence = f"amqp.{reason}", _RABBITMQ_REASONS[reason].format(queue=where)
    elif reason is None:
        exception_type, sentence = UNKNOWN_DEATH_REASON, f"dead-lettered from {where}"
    else:
        # A reason this code does not know (a newer broker, or made up): said, never trusted as
        # a type name.
        exception_type = UNKNOWN_DEATH_REASON
        sentence = f"dead-lettered from {where} for reason {_quoted(reason)}"
    if count is not None and count > 1:
        sentence += f"; dead-lettered {count} times"
    return exception_type, _head(sentence, REASON_LIMIT)


def _rabbitmq_origin(queue, exchange, keys):
    origin = f"RabbitMQ queue {_quoted(queue)}" if queue is not None else "RabbitMQ (queue unknown)"
    route = []
    if exchange is not None:
        route.append(_exchange_name(exchange))
    if keys:
        label = "routing key" if len(keys) == 1 else "routing keys"
        route.append(f"{label} " + ", ".join(_quoted(key) for key in keys))
    if route:
        origin += f" ({', '.join(route)})"
    return _line(origin, VALUE_LIMIT)


def _target_details(queue, exchange, keys):
    details = []
    if queue is not None:
        details.append(("Original queue", _value(queue)))
    if exchange is not None:
        details.append(("Exchange", _value(exchange) if exchange else "the default exchange"))
    if keys:
        details.append(("Routing keys", _value(", ".join(keys))))
    return details


def _earlier_death(death):
    _, sentence = _rabbitmq_reason(death["reason"], death["queue"], None)
    sentence += f" ({_exchange_name(death['exchange'])}"
    if death["routing-keys"]:
        sentence += ", routing keys " + ", ".join(_quoted(key) for key in death["routing-keys"])
    sentence += ")"
    sentence += "; once" if death["count"] == 1 else f"; {death['count']} times"
    if "time" in death:
        sentence += f"; last at {death['time']}"
    return _value(sentence)


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
                given.append((label, _value(value)))
    return given


def _exchange_name(exchange):
    return f"exchange {_quoted(exchange)}" if exchange else "the default exchange"


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


# Kafka ---------------------------------------------------------------------------------------


def _kafka_connect(h):
    def get(name):
        return h.get(_CONNECT + name)

    topic, partition, offset = get("topic"), get("partition"), get("offset")
    details = _kafka_position_details(topic, partition, offset)
    for name, label in (
        ("connector.name", "Connector"),
        ("task.id", "Task"),
        ("stage", "Stage"),
        ("class.name", "Class"),
        ("exception.class.name", "Exception class"),
    ):
        if get(name) is not None:
            value = _number(get(name)) if name == "task.id" else _value(get(name))
            details.append((label, value))
    reason = get("exception.message")
    if reason is None:
        stage = get("stage")
        reason = f"failed in stage {stage}" if stage else "failed"
        reason = f"Kafka Connect dead-lettered the record: it {reason}, with no exception message"
    return DeadLetter(
        kind=KAFKA_CONNECT,
        origin=_kafka_origin(topic, partition, offset),
        exception_type=_exception_type(get("exception.class.name"), KAFKA_CONNECT_ERROR),
        reason=_head(reason, REASON_LIMIT),
        stack=_stack(get("exception.stacktrace")),
        details=tuple(details),
    )


def _kafka_streams(h):
    # KIP-1034: Kafka Streams' built-in exception handlers, given a dead-letter topic
    # (errors.dead.letter.queue.topic.name), send the failed record there with these headers
    # (org.apache.kafka.streams.errors.ExceptionHandlerUtils). `exception` is the exception's
    # toString(): its class name, then ": " and its message when it has one.
    def get(name):
        value = h.get(_STREAMS + name)
        return value or None  # Java writes a null message as an empty value

    topic, partition, offset = get("topic"), get("partition"), get("offset")
    details = _kafka_position_details(topic, partition, offset)
    exception = get("exception")
    fqcn = None
    if exception is not None:
        fqcn, _, rest = exception.partition(": ")
        if not _JAVA_CLASS.fullmatch(fqcn):
            fqcn, rest = None, exception
        details.append(("Exception", _value(exception)))
    else:
        rest = None
    reason = get("message") or rest
    if not reason:
        reason = "Kafka Streams dead-lettered the record, with no exception message"
    return DeadLetter(
        kind=KAFKA_STREAMS,
        origin=_kafka_origin(topic, partition, offset),
        exception_type=_exception_type(fqcn, KAFKA_STREAMS_ERROR),
        reason=_head(reason, REASON_LIMIT),
        stack=_stack(get("stacktrace")),
        details=tuple(details),
    )


def _spring_kafka(h):
    def get(name):
        return h.get(_SPRING + name)

    topic = get("original-topic")
    partition, offset = get("original-partition"), get("original-offset")
    details = _kafka_position_details(topic, partition, offset)
    if get("original-timestamp") is not None:
        details.append(("Timestamp", _epoch_millis(get("original-timestamp"))))
    if get("original-timestamp-type") is not None:
        details.append(("Timestamp type", _value(get("original-timestamp-type"))))
    if get("original-consumer-group") is not None:
        details.append(("Consumer group", _value(get("original-consumer-group"))))
    # Spring writes key-exception-* instead when it was the record's key that failed to
    # deserialize.
    prefix = "exception-"
    if get("exception-fqcn") is None and get("key-exception-fqcn") is not None:
        prefix = "key-exception-"
        details.append(("Failed on", "the record key"))
    fqcn = get(prefix + "fqcn")
    if fqcn is not None:
        details.append(("Exception class", _value(fqcn)))
    if get(prefix + "cause-fqcn") is not None:
        details.append(("Cause", _value(get(prefix + "cause-fqcn"))))
    reason = get(prefix + "message")
    if reason is None:
        reason = "Spring Kafka dead-lettered the record, with no exception message"
    return DeadLetter(
        kind=SPRING_KAFKA,
        origin=_kafka_origin(topic, partition, offset),
        exception_type=_exception_type(fqcn, SPRING_KAFKA_ERROR),
        reason=_head(reason, REASON_LIMIT),
        stack=_stack(get(prefix + "stacktrace")),
        details=tuple(details),
    )


def _kafka_origin(topic, partition, offset):
    origin = f"Kafka topic {_quoted(topic)}" if topic is not None else "Kafka (topic unknown)"
    if partition is not None:
        origin += f" partition {_number(partition)}"
    if offset is not None:
        origin += f" offset {_number(offset)}"
    return _line(origin, VALUE_LIMIT)


def _kafka_position_details(topic, partition, offset):
    details = []
    if topic is not None:
        details.append(("Topic", _value(topic)))
    if partition is not None:
        details.append(("Partition", _number(partition)))
    if offset is not None:
        details.append(("Offset", _number(offset)))
    return details


def _exception_type(fqcn, default):
    fqcn = _line(fqcn or "", NAME_LIMIT).strip()
    return fqcn or default


def _number(text):
    """Decimal text as a plain number; anything else (Spring's binary, base64) as given."""
    stripped = text.strip()
    if _DECIMAL.fullmatch(stripped):
        return str(int(stripped))
    return _value(text)


def _epoch_millis(text):
    """Epoch milliseconds as ISO 8601 UTC; anything else as given."""
    stripped = text.strip()
    if _DECIMAL.fullmatch(stripped) and int(stripped) >= 0:
        try:
            moment = _EPOCH + timedelta(milliseconds=int(stripped))
        except OverflowError:
            return _value(text)
        return moment.isoformat(timespec="milliseconds")
    return _value(text)


# NATS JetStream and Redis Streams ------------------------------------------------------------


def _nats(h):
    advisory = h[NATS_ADVISORY]
    stream, subject, sequence = h.get(NATS_STREAM), h.get(NATS_SUBJECT), h.get(NATS_SEQUENCE)
    origin = f"NATS stream {_quoted(stream)}" if stream else "NATS (stream unknown)"
    if subject:
        origin += f" subject {_quoted(subject)}"
    if sequence:
        origin += f" sequence {_number(sequence)}"
    details = []
    for name, label in (
        (NATS_SUBJECT, "Subject"),
        (NATS_STREAM, "Stream"),
        (NATS_SEQUENCE, "Sequence"),
        (NATS_STORED_AT, "Stored at"),
        (NATS_CONSUMER, "Consumer"),
        (NATS_DELIVERIES, "Deliveries"),
        (NATS_TERMINATED_REASON, "Consumer's reason"),
    ):
        if h.get(name):
            value = _number(h[name]) if name in (NATS_SEQUENCE, NATS_DELIVERIES) else h[name]
            details.append((label, _value(value)))
    exception_type = NATS_EXCEPTION_TYPES.get(advisory)
    if exception_type is None:
        # An advisory this code does not know (a newer drain, or made up): said, never trusted
        # as a type name.
        exception_type = NATS_UNKNOWN_ADVISORY
        details.append(("Advisory", _value(advisory)))
    reason = h.get(NATS_REASON) or _nats_reason(advisory, h)
    return DeadLetter(
        kind=NATS,
        origin=_line(origin, VALUE_LIMIT),
        exception_type=exception_type,
        reason=_line(reason, REASON_LIMIT),
        stack=None,
        details=tuple(details),
        count=_count(h.get(NATS_DELIVERIES)),
    )


def _nats_reason(advisory, h):
    """The reason when the drain wrote none: from the advisory and the consumer."""
    consumer, stream = h.get(NATS_CONSUMER), h.get(NATS_STREAM)
    who = f"consumer {_quoted(consumer)}" if consumer else "a consumer"
    if stream:
        who += f" of stream {_quoted(stream)}"
    count = _count(h.get(NATS_DELIVERIES))
    after = "" if count is None else f" after delivering it {_times(count)}"
    if advisory == NATS_MAX_DELIVER:
        return f"max deliveries reached: {who} gave up{after}"
    if advisory == NATS_TERMINATED:
        sentence = f"terminated by {who} (AckTerm){after}"
        if h.get(NATS_TERMINATED_REASON):
            sentence += f": {h[NATS_TERMINATED_REASON]}"
        return sentence
    return f"NATS JetStream advisory {_quoted(advisory)}"


def _redis(h):
    stream, entry_id, group = h[REDIS_STREAM], h[REDIS_ENTRY_ID], h.get(REDIS_GROUP)
    count = _count(h.get(REDIS_DELIVERIES))
    origin = f"Redis stream {_quoted(stream)} entry {_line(entry_id, 60)}"
    if group:
        origin += f", consumer group {_quoted(group)}"
    details = []
    for name, label in (
        (REDIS_STREAM, "Stream"),
        (REDIS_ENTRY_ID, "Entry id"),
        (REDIS_GROUP, "Consumer group"),
        (REDIS_CONSUMER, "Last consumer"),
        (REDIS_DELIVERIES, "Deliveries"),
        (REDIS_IDLE_MS, "Idle (ms)"),
    ):
        if h.get(name):
            value = _number(h[name]) if name in (REDIS_DELIVERIES, REDIS_IDLE_MS) else h[name]
            details.append((label, _value(value)))
    times = "an unknown number of times" if count is None else _times(count)
    where = f"consumer group {_quoted(group)}" if group else "a consumer group"
    reason = f"delivered {times} to {where} of stream {_quoted(stream)} without an acknowledgement"
    consumer = h.get(REDIS_CONSUMER)
    if consumer:
        reason += f"; last consumer {_quoted(consumer)}"
    elif consumer == "":
        reason += "; its last consumer is not known (Antidote claimed it before a restart)"
    return DeadLetter(
        kind=REDIS,
        origin=_line(origin, VALUE_LIMIT),
        exception_type=REDIS_UNACKNOWLEDGED,
        reason=_head(reason, REASON_LIMIT),
        stack=None,
        details=tuple(details),
        count=count,
    )


def _count(text):
    """A delivery count: a whole number >= 0, or None when the text is not one."""
    if text is None:
        return None
    stripped = text.strip()
    if stripped.isascii() and stripped.isdigit() and len(stripped) <= 18:
        return int(stripped)
    return None


def _times(count):
    return "once" if count == 1 else f"{count} times"


# Untrusted text ------------------------------------------------------------------------------


def _stack(text):
    # Python tracebacks put the innermost frame last, so a long stack keeps its end.
    if text is None:
        return None
    if len(text) <= STACK_LIMIT:
        return text
    return "…" + text[-(STACK_LIMIT - 1) :]


def _head(text, limit):
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _line(text, limit):
    # Newlines, control and bidi characters would let a header forge extra lines or reorder what
    # a person reads: each becomes a space.
    text = _head(text, limit)
    if text.isprintable():  # the common case, without a Python step per character
        return text
    return "".join(c if c.isprintable() else " " for c in text)


def _value(text):
    return _line(text, VALUE_LIMIT)


def _quoted(name):
    return f"'{_line(name, NAME_LIMIT)}'"
