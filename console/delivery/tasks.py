"""The delivery engine's Celery tasks: thin, each calls console.delivery.execution or services.

None of these retries on its own: beat enqueues them again soon, and the work they do is
idempotent (a run claims only what is due; a sweep recovers a dead run once)."""

from django.utils import timezone

from console import leases
from console.celery_task import console_task
from console.delivery.execution import delivery_run, leases_sweep
from console.delivery.poison import poison_feed_sweep
from console.delivery.services import delivery_dispatch
from console.lake.execution import lake_history_compact_if_due, lake_state_compact_if_due
from console.lake.models import CompactionRun
from console.readmodels.models import CountsCheck, RefreshRun


@console_task("workers.tasks.delivery_run_task", soft_time_limit=3300, time_limit=3600)
def delivery_run_task(queues=None):
    """One delivery run on the spark worker. Returns the run's id, or None when another run was
    in progress (beat will try again at the next tick)."""
    run = delivery_run(queues=queues)
    if run is not None:
        lake_state_compact_if_due()
        lake_history_compact_if_due()
    return run.id if run else None


@console_task("workers.tasks.sweep_leases_task", soft_time_limit=240, time_limit=300)
def sweep_leases_task():
    """R7: recover what dead delivery runs held. Then the poison list's feed: files older than a
    day deleted, a file its process never wrote written again (R9). Then the other work whose
    heartbeat stopped (a refresh, a counts check, a compaction) declared failed, so that none
    looks as if it ran for ever. Returns how many messages were recovered."""
    recovered = leases_sweep()
    poison_feed_sweep()
    now = timezone.now()
    for model in (RefreshRun, CountsCheck, CompactionRun):
        leases.sweep_stale(model, now=now)
    return recovered


@console_task("workers.tasks.delivery_dispatch_task", soft_time_limit=60, time_limit=90)
def delivery_dispatch_task():
    """R16, on beat's tick: a delivery run of its own for every enabled queue that no run holds,
    so a slow or hanging handler on one queue never holds another back. Returns the queues
    handed to the spark worker."""
    return delivery_dispatch(enqueue=_queue_run_enqueue)


def _queue_run_enqueue(queue):
    delivery_run_task.delay(queues=[queue])


def delivery_run_enqueue(queues=None):
    """Ask the spark worker for delivery now rather than at beat's next tick (of these queues,
    or all)."""
    delivery_dispatch(enqueue=_queue_run_enqueue, now=True, queues=queues)
