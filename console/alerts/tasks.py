"""The alerts' Celery tasks, on the default worker: send what is due, and look at the watches.
Task names read "workers.tasks.<name>" like every other (workers.celery's beat schedule)."""

from celery import shared_task

from console.alerts.sending import alerts_send
from console.alerts.watch import alerts_watch


@shared_task(name="workers.tasks.alerts_send_task", ignore_result=True)
def alerts_send_task():
    """Send the deliveries due now; returns (sent, failed). Idempotent: each delivery is
    claimed before it is sent, so a duplicate task sends nothing twice."""
    return alerts_send()


@shared_task(name="workers.tasks.alerts_watch_task", ignore_result=True)
def alerts_watch_task():
    """Raise what the watches find (inflow over a threshold, a broker consumer gone silent),
    then send it."""
    raised = alerts_watch()
    if raised:
        alerts_send()
    return raised


def alerts_send_enqueue():
    alerts_send_task.delay()
