"""What Antidote's NATS JetStream drain writes on a message it took off a stream: NATS keeps no
dead-letter record, so the drain puts the origin and the advisory (what JetStream published when
a consumer gave up on the message: its max_deliver reached, or an AckTerm) in headers named here,
in lower case (NATS's own headers are spelled `Nats-...`)."""

from workers.brokers.formats.common import (
    REASON_LIMIT,
    VALUE_LIMIT,
    DeadLetter,
    count_of,
    given_details,
    how_often,
    number_text,
    one_line,
    quoted,
    shown,
)
from workers.brokers.registry import NATS

KIND = NATS.kind
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

_LABELS = (
    (NATS_SUBJECT, "Subject"),
    (NATS_STREAM, "Stream"),
    (NATS_SEQUENCE, "Sequence"),
    (NATS_STORED_AT, "Stored at"),
    (NATS_CONSUMER, "Consumer"),
    (NATS_DELIVERIES, "Deliveries"),
    (NATS_TERMINATED_REASON, "Consumer's reason"),
)


def carries(found):
    return NATS_ADVISORY in found


def read(h):
    advisory = h[NATS_ADVISORY]
    stream, subject, sequence = h.get(NATS_STREAM), h.get(NATS_SUBJECT), h.get(NATS_SEQUENCE)
    origin = f"NATS stream {quoted(stream)}" if stream else "NATS (stream unknown)"
    if subject:
        origin += f" subject {quoted(subject)}"
    if sequence:
        origin += f" sequence {number_text(sequence)}"
    details = given_details(h, _LABELS, numbers=(NATS_SEQUENCE, NATS_DELIVERIES))
    exception_type = NATS_EXCEPTION_TYPES.get(advisory)
    if exception_type is None:
        # An advisory this code does not know (a newer drain, or made up): said, never trusted
        # as a type name.
        exception_type = NATS_UNKNOWN_ADVISORY
        details.append(("Advisory", shown(advisory)))
    reason = h.get(NATS_REASON) or _nats_reason(advisory, h)
    return DeadLetter(
        kind=KIND,
        origin=one_line(origin, VALUE_LIMIT),
        exception_type=exception_type,
        reason=one_line(reason, REASON_LIMIT),
        stack=None,
        details=tuple(details),
        count=count_of(h.get(NATS_DELIVERIES)),
    )


def _nats_reason(advisory, h):
    """The reason when the drain wrote none: from the advisory and the consumer."""
    consumer, stream = h.get(NATS_CONSUMER), h.get(NATS_STREAM)
    who = f"consumer {quoted(consumer)}" if consumer else "a consumer"
    if stream:
        who += f" of stream {quoted(stream)}"
    count = count_of(h.get(NATS_DELIVERIES))
    after = "" if count is None else f" after delivering it {how_often(count)}"
    if advisory == NATS_MAX_DELIVER:
        return f"max deliveries reached: {who} gave up{after}"
    if advisory == NATS_TERMINATED:
        sentence = f"terminated by {who} (AckTerm){after}"
        if h.get(NATS_TERMINATED_REASON):
            sentence += f": {h[NATS_TERMINATED_REASON]}"
        return sentence
    return f"{NATS.title} advisory {quoted(advisory)}"
