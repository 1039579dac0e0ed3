"""The age of each queue's oldest quarantined message, kept beside its counts (QueueStat).

Finding it walks the queue's index by last failure until the first quarantined (NDLV) row: one
row in the common case, but every older row of other states first (a queue with a long history
of failed or ended messages and a few recent quarantined ones walks them all: about a second on
PostgreSQL for 240,000 rows). So it is not found where it is read (a /metrics scrape, a page) but
here, by the refresh's periodic task, for the queues whose counts moved since it was last found
(every writer of the counts moves their updated_at: a refresh, a decision's chunk, a purge). It
is as current as the counts it goes with."""

from django.db.models import F, Q

from console.readmodels.models import MessageIndex, QueueStat
from workers.engine.states import NDLV


def quarantine_oldest_find(queue):
    """When `queue`'s oldest quarantined message last failed; None if none is quarantined."""
    return (
        MessageIndex.objects.filter(queue=queue, state=NDLV, last_failure_at__isnull=False)
        .order_by("last_failure_at")
        .values_list("last_failure_at", flat=True)
        .first()
    )


def quarantine_oldest_keep():
    """Find the oldest quarantined message again for each queue whose counts moved since it was
    last found; returns the queues looked at. Counts that move meanwhile leave theirs for the
    next pass (the write is conditional on the counts it was found for)."""
    # Not "checked before updated": the writers' clocks are those of their hosts, and a move
    # stamped earlier than the last check must not be missed.
    moved = QueueStat.objects.filter(
        Q(oldest_checked_at__isnull=True) | ~Q(oldest_checked_at=F("updated_at"))
    ).values_list("queue", "counts", "updated_at")
    looked = []
    for queue, counts, updated_at in moved:
        at = quarantine_oldest_find(queue) if counts.get(NDLV, 0) > 0 else None
        QueueStat.objects.filter(queue=queue, updated_at=updated_at).update(
            oldest_quarantined_at=at, oldest_checked_at=updated_at
        )
        looked.append(queue)
    return looked
