"""Delivery's short writes: queues handed over for runs of their own (R16), and quarantined
messages put on the shared poison list (R9). The runs themselves: console.delivery.execution."""

from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from console.delivery.models import DeliveryHandover, DeliveryLock
from console.delivery.poison import poison_entries_put
from console.queues.models import Queue
from console.readmodels.selectors import read_models_due_queues


def delivery_dispatch(*, enqueue, now=False, queues=None):
    """Hand every enabled queue (of `queues`, or all) that no running run holds and that may
    hold a due message to `enqueue(queue)`, each for a run of its own (R16). A queue with nothing
    due gets no run, so an idle product starts no Spark job. A queue handed over within the last
    DELIVERY_INTERVAL_SECONDS is not handed over again unless `now`: its task may still be
    waiting for a worker. Asked for `now`, a queue a run holds is marked wanted instead: it gets
    its next run as soon as that run lets go (`_run_leave`); and a free queue already handed
    over now, whose run has not read the lake yet (DeliveryHandover), is not handed over again:
    that run reads after this ask. Returns the queues handed over."""
    if now:
        # Before the holders are read: a run that lets go in between has seen the mark.
        marked = DeliveryLock.objects.all()
        if queues is not None:
            marked = marked.filter(queue__in=list(queues))
        marked.update(wanted=True)
    held = set(DeliveryLock.objects.values_list("queue", flat=True))
    free = Queue.objects.filter(enabled=True).exclude(name__in=held).order_by("name")
    if queues is not None:
        free = free.filter(name__in=list(queues))
    names = list(free.values_list("name", flat=True))
    at = timezone.now()
    waiting = set()
    if now:
        # A row found here is one its run has not deleted yet: that run reads the lake after
        # this ask's commit (it deletes its row before it reads: delivery_run).
        fresh = at - timedelta(seconds=settings.DELIVERY_INTERVAL_SECONDS)
        waiting = set(
            DeliveryHandover.objects.filter(queue__in=names, at__gt=fresh).values_list(
                "queue", flat=True
            )
        )
    handed = []
    for queue in read_models_due_queues(queues=names, now=at):
        key = f"delivery:dispatched:{queue}"
        if now:
            if queue in waiting:
                continue
            DeliveryHandover.objects.update_or_create(queue=queue, defaults={"at": at})
            cache.set(key, 1, timeout=settings.DELIVERY_INTERVAL_SECONDS)
        elif not cache.add(key, 1, timeout=settings.DELIVERY_INTERVAL_SECONDS):
            continue
        enqueue(queue)
        handed.append(queue)
    return handed


def delivery_handovers_take(*, queues):
    """A run about to read the lake for `queues`: the hand-overs waiting for it are its now
    (DeliveryHandover). Call it before the read, outside a transaction, so that an ask that
    finds a row waiting has committed before the run reads."""
    DeliveryHandover.objects.filter(queue__in=list(queues)).delete()


def poison_add(*, entries, source):
    """R9: put quarantined messages on the shared poison list (their latest reason wins), with
    their changes in the list's change log (console.delivery.poison). Call inside the
    transaction that commits them."""
    poison_entries_put(entries=entries, source=source)
