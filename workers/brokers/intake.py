"""The handler of a queue fed by a dead-letter queue: every message that arrives there has
already failed somewhere else, so it is quarantined at once, with the failure its dead-letter
record gives (workers.brokers.dead_letters: a RabbitMQ `x-death`, Kafka Connect's, Kafka
Streams' or Spring Kafka's headers, the origin a NATS or Redis Streams drain wrote) as its
reason, exception type and stack: the failure groups group by what really went wrong.

SEMANTICS has every message arrive TBDL and reach NDLV only through a delivery (R1), so this is
a handler, not a shortcut in ingest: the message is delivered once, to this, and fails
permanently (R6: the queue's `on_permanent` says quarantine or return to sender).
"""

from workers.brokers.dead_letters import dead_letter_of
from workers.engine.handlers import PermanentFailure

NO_RECORD_TYPE = "dead-letter.unrecorded"


class DeadLettered(PermanentFailure):
    """The message died before it reached Antidote."""


def dead_letter(message):
    record = dead_letter_of(message.headers)
    if record is None:
        raise DeadLettered(
            "arrived in a dead-letter queue with no record of why it died "
            "(no x-death, Kafka Connect, Kafka Streams or Spring Kafka dead-letter headers, "
            "and no NATS or Redis Streams origin)",
            exception_type=NO_RECORD_TYPE,
        )
    raise DeadLettered(record.reason, exception_type=record.exception_type, stack=record.stack)
