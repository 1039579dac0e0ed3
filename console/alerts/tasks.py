"""The alerts' Celery tasks, on the default worker: send what is due, and look at the watches."""

from console.alerts.sending import alerts_send
from console.alerts.watch import alerts_watch
from console.celery_task import console_task


@console_task("workers.tasks.alerts_send_task")
def alerts_send_task():
    """Send the deliveries due now; returns (sent, failed). Idempotent: each delivery is
    claimed before it is sent, so a duplicate task sends nothing twice."""
    return alerts_send()


@console_task("workers.tasks.alerts_watch_task")
def alerts_watch_task():
    """Raise what the watches find (inflow over a threshold, a broker consumer gone silent),
    then send it."""
    raised = alerts_watch()
    if raised:
        alerts_send()
    return raised


def alerts_send_enqueue():
    alerts_send_task.delay()
