"""Spring Kafka's dead-letter record: the `kafka_dlt-*` headers its DeadLetterPublishingRecoverer
writes."""

from datetime import timedelta

from workers.brokers.formats.common import (
    DECIMAL,
    EPOCH,
    kafka_dead_letter,
    kafka_position_details,
    shown,
)

KIND = "spring-kafka"
SPRING_KAFKA_ERROR = "spring-kafka.error"
_SPRING = "kafka_dlt-"


def carries(found):
    return any(name.startswith(_SPRING) for name in found)


def read(h):
    def get(name):
        return h.get(_SPRING + name)

    topic = get("original-topic")
    partition, offset = get("original-partition"), get("original-offset")
    details = kafka_position_details(topic, partition, offset)
    if get("original-timestamp") is not None:
        details.append(("Timestamp", _epoch_millis(get("original-timestamp"))))
    if get("original-timestamp-type") is not None:
        details.append(("Timestamp type", shown(get("original-timestamp-type"))))
    if get("original-consumer-group") is not None:
        details.append(("Consumer group", shown(get("original-consumer-group"))))
    # Spring writes key-exception-* instead when it was the record's key that failed to
    # deserialize.
    prefix = "exception-"
    if get("exception-fqcn") is None and get("key-exception-fqcn") is not None:
        prefix = "key-exception-"
        details.append(("Failed on", "the record key"))
    fqcn = get(prefix + "fqcn")
    if fqcn is not None:
        details.append(("Exception class", shown(fqcn)))
    if get(prefix + "cause-fqcn") is not None:
        details.append(("Cause", shown(get(prefix + "cause-fqcn"))))
    reason = get(prefix + "message")
    if reason is None:
        reason = "Spring Kafka dead-lettered the record, with no exception message"
    return kafka_dead_letter(
        KIND,
        (topic, partition, offset),
        fqcn=fqcn,
        default_type=SPRING_KAFKA_ERROR,
        reason=reason,
        stack=get(prefix + "stacktrace"),
        details=details,
    )


def _epoch_millis(text):
    """Epoch milliseconds as ISO 8601 UTC; anything else as given."""
    stripped = text.strip()
    if DECIMAL.fullmatch(stripped) and int(stripped) >= 0:
        try:
            moment = EPOCH + timedelta(milliseconds=int(stripped))
        except OverflowError:
            return shown(text)
        return moment.isoformat(timespec="milliseconds")
    return shown(text)
