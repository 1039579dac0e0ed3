"""Delivery follows ingest: new messages are handed to a run at once, not at beat's next tick."""

from django.db import transaction
from django.dispatch import receiver

from console.delivery.signals import queues_wanted
from console.delivery.tasks import delivery_run_enqueue
from console.ingest.signals import messages_arrived


@receiver(messages_arrived, dispatch_uid="delivery.wake_on_ingest")
def _wake_on_ingest(sender, queues, **kwargs):
    # robust: a broker that is down must not fail an ingest that already committed.
    transaction.on_commit(lambda: delivery_wake(queues), robust=True)


@receiver(queues_wanted, dispatch_uid="delivery.rerun_wanted")
def _rerun_wanted(sender, queues, **kwargs):
    transaction.on_commit(lambda: delivery_run_enqueue(queues=sorted(queues)), robust=True)


def delivery_wake(queues):
    """Hand the queues that got new messages to delivery runs now. Every ingest asks: one whose
    queue a run holds marks it wanted (that run may have read the lake before these messages:
    it starts the next as it lets go), and one whose queue was handed over to a run that has
    not read the lake yet queues nothing more (console.delivery.services.delivery_dispatch). A
    burst of ingests therefore queues one run task a queue, and none is left to beat's tick."""
    delivery_run_enqueue(queues=sorted(queues))
