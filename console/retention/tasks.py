"""The retention's Celery tasks: thin, each calls console.retention.execution."""

import logging

from console.celery_task import console_task
from console.retention.execution import (
    TIME_LIMIT_SECONDS,
    purge_execute,
    purge_run,
    purges_sweep,
)
from console.retention.services import PurgeBusy

log = logging.getLogger(__name__)


@console_task(
    "workers.tasks.purge_task",
    soft_time_limit=TIME_LIMIT_SECONDS - 300,
    time_limit=TIME_LIMIT_SECONDS,
)
def purge_task(purge_id=None):
    """On the spark worker: the scheduler's daily purge (no id: a new one, run by "system"), or
    the purge someone asked for (its id). Idempotent: a duplicate task finds the purge taken or
    finished and does nothing; a lost one is handed over again by the sweeper. A failed purge is
    recorded on its row, not raised. Returns the purge's status, or None when there was nothing
    for this task to run (another purge in progress, or this one taken)."""
    if purge_id is None:
        try:
            purge = purge_run(actor="system")
        except PurgeBusy:
            log.info("a purge is queued or running already; the scheduler's is skipped")
            return None
    else:
        purge = purge_execute(purge_id=purge_id)
    return purge.status if purge else None


@console_task("workers.tasks.purges_sweep_task", soft_time_limit=240, time_limit=300)
def purges_sweep_task():
    """Hand purges that wait too long or whose worker died to the spark worker again, and delete
    the lake directories purges swapped out once their grace period is over. Returns how many
    purges were handed over."""
    return len(purges_sweep(enqueue=purge_enqueue))


def purge_enqueue(purge_id):
    """Hand a purge to the spark worker. A lost task is found again by the sweeper."""
    purge_task.delay(purge_id)
