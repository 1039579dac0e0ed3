"""The options every console task is declared with, stated once.

Each app's tasks live in console/<app>/tasks.py, yet their names still read "workers.tasks.<name>",
as when they all lived there: the routes and beat's schedule (workers.celery) and tasks already
waiting in a broker name them so, hence the full name written out at each task. No caller reads a
task's result (each records what it did on its own rows), so none is stored."""

from celery import shared_task


def console_task(name, *, soft_time_limit=None, time_limit=None):
    """`@shared_task` under `name`, its result not stored, with these time limits when given."""
    options = {"name": name, "ignore_result": True}
    if time_limit is not None:
        options.update(soft_time_limit=soft_time_limit, time_limit=time_limit)
    return shared_task(**options)
