"""Delivery follows ingest: new messages are handed to a run at once, not at beat's next tick."""

from django.core.cache import cache
from django.db import transaction
from django.dispatch import receiver

from console.delivery.signals import queues_wanted
from console.delivery.tasks import delivery_run_enqueue
from console.ingest.signals import messages_arrived

# Ingests of one queue closer together than this wake it once: a burst of API calls must not
# queue a run task each ahead of the spark worker's other work. What a skipped wake would have
# delivered, the first wake's run, or the one after it, delivers.
WAKE_DEBOUNCE_SECONDS = 1


@receiver(messages_arrived, dispatch_uid="delivery.wake_on_ingest")
def _wake_on_ingest(sender, queues, **kwargs):
    # robust: a broker that is down must not fail an ingest that already committed.
    transaction.on_commit(lambda: delivery_wake(queues), robust=True)


@receiver(queues_wanted, dispatch_uid="delivery.rerun_wanted")
def _rerun_wanted(sender, queues, **kwargs):
    transaction.on_commit(lambda: delivery_run_enqueue(queues=sorted(queues)), robust=True)


def delivery_wake(queues):
    """Hand the queues that got new messages to delivery runs now (those whose run is still
    going get theirs as soon as it ends)."""
    woken = [
        q for q in sorted(queues) if cache.add(f"delivery:woken:{q}", 1, WAKE_DEBOUNCE_SECONDS)
    ]
    if woken:
        delivery_run_enqueue(queues=woken)
