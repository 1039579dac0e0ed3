"""The read models' Celery task: the refresh, on the spark worker."""

from console.celery_task import console_task
from console.readmodels.execution import read_models_refresh
from console.readmodels.oldest import quarantine_oldest_keep
from console.readmodels.verify import counts_verify_scheduled


@console_task("workers.tasks.browse_refresh_task", soft_time_limit=1700, time_limit=1800)
def browse_refresh_task(full=False):
    """Fold the lake's new events into the console's read models. Returns the refresh's id, or
    None when there was nothing new or another refresh was running (beat comes back on its next
    tick; a lost task only delays the index until then). Then, on every tick, the oldest
    quarantined message of each queue whose counts moved (a decision moves them without a
    refresh)."""
    run = read_models_refresh(full=full)
    quarantine_oldest_keep()
    return run.id if run else None


@console_task("workers.tasks.counts_verify_task", soft_time_limit=3500, time_limit=3600)
def counts_verify_task():
    """Recount every count the console shows from the lake and compare; repair what differs
    unless COUNTS_VERIFY_REPAIR is off. Returns the check's id. Not retried: beat's next tick
    checks again, and a check that dies leaves the read models as they were."""
    return counts_verify_scheduled().id
