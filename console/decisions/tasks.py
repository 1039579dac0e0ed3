"""The decisions' Celery tasks: thin, each calls console.decisions.execution or the sweeper."""

from console.celery_task import console_task
from console.decisions.execution import action_request_execute
from console.decisions.sweeper import break_glass_overdue_sweep, decisions_sweep


@console_task("workers.tasks.action_request_execute_task", soft_time_limit=3300, time_limit=3600)
def action_request_execute_task(request_id):
    """Carry out an approved action request on the spark worker, chunk by chunk. Idempotent: a
    duplicate task finds the request taken (or its chunks committed) and does nothing; a lost
    one is re-enqueued by the decisions sweeper."""
    action_request_execute(request_id=request_id)


@console_task("workers.tasks.decisions_sweep_task", soft_time_limit=240, time_limit=300)
def decisions_sweep_task():
    """Expire approvals, re-enqueue requests whose task was lost or whose worker died, and
    watch canaries. Returns what it did."""
    return decisions_sweep(enqueue=execute_enqueue)


@console_task("workers.tasks.break_glass_overdue_task", soft_time_limit=60, time_limit=120)
def break_glass_overdue_task():
    """Alert, once each, the break-glass decisions whose review is overdue. Idempotent: each is
    claimed before it is recorded, so a duplicate task alerts nothing twice. Returns their ids."""
    return break_glass_overdue_sweep()


def execute_enqueue(request_id):
    """Hand an approved request to the spark worker. A lost task is found again by the
    decisions sweeper, so the broker being down loses nothing."""
    action_request_execute_task.delay(request_id)
