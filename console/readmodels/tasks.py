"""The read models' Celery task: the refresh, on the spark worker.

Its name is kept from when every task lived in workers.tasks: the routes and beat's schedule
(workers.celery) and tasks already waiting in a broker name it so."""

from celery import shared_task

from console.readmodels.execution import read_models_refresh
from console.readmodels.oldest import quarantine_oldest_keep
from console.readmodels.verify import counts_verify_scheduled


@shared_task(
    name="workers.tasks.browse_refresh_task",
    soft_time_limit=1700,
    time_limit=1800,
    ignore_result=True,
)
def browse_refresh_task(full=False):
    """Fold the lake's new events into the console's read models. Returns the refresh's id, or
    None when there was nothing new or another refresh was running (beat comes back on its next
    tick; a lost task only delays the index until then). Then, on every tick, the oldest
    quarantined message of each queue whose counts moved (a decision moves them without a
    refresh)."""
    run = read_models_refresh(full=full)
    quarantine_oldest_keep()
    return run.id if run else None


@shared_task(
    name="workers.tasks.counts_verify_task",
    soft_time_limit=3500,
    time_limit=3600,
    ignore_result=True,
)
def counts_verify_task():
    """Recount every count the console shows from the lake and compare; repair what differs
    unless COUNTS_VERIFY_REPAIR is off. Returns the check's id. Not retried: beat's next tick
    checks again, and a check that dies leaves the read models as they were."""
    return counts_verify_scheduled().id
