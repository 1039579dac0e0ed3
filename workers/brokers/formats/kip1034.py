"""Kafka's dead-letter records: Kafka Connect's `__connect.errors.*` headers and Kafka Streams'
`__streams.errors.*` (KIP-1034)."""

import re

from workers.brokers.formats.common import (
    kafka_dead_letter,
    kafka_position_details,
    number_text,
    shown,
)

KAFKA_CONNECT = "kafka-connect"
KAFKA_STREAMS = "kafka-streams"
KAFKA_CONNECT_ERROR = "kafka-connect.error"
KAFKA_STREAMS_ERROR = "kafka-streams.error"
_CONNECT = "__connect.errors."
_STREAMS = "__streams.errors."
# What Java's Throwable.toString() starts with: the exception's class name, then ": message".
_JAVA_CLASS = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")


def carries_connect(found):
    return any(name.startswith(_CONNECT) for name in found)


def carries_streams(found):
    return any(name.startswith(_STREAMS) for name in found)


def read_connect(h):
    def get(name):
        return h.get(_CONNECT + name)

    topic, partition, offset = get("topic"), get("partition"), get("offset")
    details = kafka_position_details(topic, partition, offset)
    for name, label in (
        ("connector.name", "Connector"),
        ("task.id", "Task"),
        ("stage", "Stage"),
        ("class.name", "Class"),
        ("exception.class.name", "Exception class"),
    ):
        if get(name) is not None:
            value = number_text(get(name)) if name == "task.id" else shown(get(name))
            details.append((label, value))
    reason = get("exception.message")
    if reason is None:
        stage = get("stage")
        reason = f"failed in stage {stage}" if stage else "failed"
        reason = f"Kafka Connect dead-lettered the record: it {reason}, with no exception message"
    return kafka_dead_letter(
        KAFKA_CONNECT,
        (topic, partition, offset),
        fqcn=get("exception.class.name"),
        default_type=KAFKA_CONNECT_ERROR,
        reason=reason,
        stack=get("exception.stacktrace"),
        details=details,
    )


def read_streams(h):
    # KIP-1034: Kafka Streams' built-in exception handlers, given a dead-letter topic
    # (errors.dead.letter.queue.topic.name), send the failed record there with these headers
    # (org.apache.kafka.streams.errors.ExceptionHandlerUtils). `exception` is the exception's
    # toString(): its class name, then ": " and its message when it has one.
    def get(name):
        value = h.get(_STREAMS + name)
        return value or None  # Java writes a null message as an empty value

    topic, partition, offset = get("topic"), get("partition"), get("offset")
    details = kafka_position_details(topic, partition, offset)
    exception = get("exception")
    fqcn = None
    if exception is not None:
        fqcn, _, rest = exception.partition(": ")
        if not _JAVA_CLASS.fullmatch(fqcn):
            fqcn, rest = None, exception
        details.append(("Exception", shown(exception)))
    else:
        rest = None
    reason = get("message") or rest
    if not reason:
        reason = "Kafka Streams dead-lettered the record, with no exception message"
    return kafka_dead_letter(
        KAFKA_STREAMS,
        (topic, partition, offset),
        fqcn=fqcn,
        default_type=KAFKA_STREAMS_ERROR,
        reason=reason,
        stack=get("stacktrace"),
        details=details,
    )
