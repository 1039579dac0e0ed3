"""The runs' Celery task, on the default worker."""

from console.celery_task import console_task
from console.runs.services import runs_forget


@console_task("workers.tasks.runs_forget_task", soft_time_limit=300, time_limit=360)
def runs_forget_task():
    """Forget the delivery runs and refreshes older than RUNS_KEEP_DAYS. Returns how many of
    each went. Not retried: the next tick does what this one left."""
    return runs_forget()
