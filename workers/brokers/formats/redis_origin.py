"""What Antidote's Redis Streams drain writes on an entry it claimed. Redis records no reason: an
entry is a dead letter because its group delivered it again and again and nobody acknowledged
it."""

from workers.brokers.formats.common import (
    REASON_LIMIT,
    VALUE_LIMIT,
    DeadLetter,
    count_of,
    cut,
    given_details,
    how_often,
    one_line,
    quoted,
)
from workers.brokers.registry import REDIS_STREAMS

KIND = REDIS_STREAMS.kind
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

_LABELS = (
    (REDIS_STREAM, "Stream"),
    (REDIS_ENTRY_ID, "Entry id"),
    (REDIS_GROUP, "Consumer group"),
    (REDIS_CONSUMER, "Last consumer"),
    (REDIS_DELIVERIES, "Deliveries"),
    (REDIS_IDLE_MS, "Idle (ms)"),
)


def carries(found):
    return REDIS_STREAM in found and REDIS_ENTRY_ID in found


def read(h):
    stream, entry_id, group = h[REDIS_STREAM], h[REDIS_ENTRY_ID], h.get(REDIS_GROUP)
    count = count_of(h.get(REDIS_DELIVERIES))
    origin = f"Redis stream {quoted(stream)} entry {one_line(entry_id, 60)}"
    if group:
        origin += f", consumer group {quoted(group)}"
    details = given_details(h, _LABELS, numbers=(REDIS_DELIVERIES, REDIS_IDLE_MS))
    times = "an unknown number of times" if count is None else how_often(count)
    where = f"consumer group {quoted(group)}" if group else "a consumer group"
    reason = f"delivered {times} to {where} of stream {quoted(stream)} without an acknowledgement"
    consumer = h.get(REDIS_CONSUMER)
    if consumer:
        reason += f"; last consumer {quoted(consumer)}"
    elif consumer == "":
        reason += "; its last consumer is not known (Antidote claimed it before a restart)"
    return DeadLetter(
        kind=KIND,
        origin=one_line(origin, VALUE_LIMIT),
        exception_type=REDIS_UNACKNOWLEDGED,
        reason=cut(reason, REASON_LIMIT),
        stack=None,
        details=tuple(details),
        count=count,
    )
