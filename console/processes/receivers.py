"""Celery's signals, for the heartbeats of the workers and beat (console.processes.beating).

Here, not in workers/celery.py: workers/ never imports console/, and these need the console's
models. Connected when the apps load (apps.ready), which Celery's Django fix-up does in every
worker and in beat before they are ready; in any other process they never fire, or (a task run
eagerly, in a test or the web) do nothing, as that process does not beat."""

from celery.signals import beat_init, task_postrun, task_prerun, worker_ready, worker_shutdown

from console.processes.beating import beating_start, beating_stop, work_ended, work_started
from console.processes.models import BEAT, SPARK, WORKER
from workers.celery import SPARK_QUEUE

WORK_ARGUMENT_MAX = 100


def work_text(name, args, kwargs):
    """A task as its worker's current work: its name in words and its main argument (the first
    one given): "delivery run orders", "action request execute 42", "lake query 7"."""
    words = name.rsplit(".", 1)[-1].removesuffix("_task").replace("_", " ")
    given = [*(args or ()), *(kwargs or {}).values()]
    main = given[0] if given else None
    if isinstance(main, list | tuple):
        main = ", ".join(str(m) for m in main)
    if main is None or isinstance(main, bool) or main == "":
        return words
    return f"{words} {str(main)[:WORK_ARGUMENT_MAX]}"


@worker_ready.connect(dispatch_uid="processes-worker-ready")
def _worker_beats(sender=None, **kwargs):
    """A worker beats as the spark worker when it takes the spark queue, else as the default
    worker."""
    consumer = getattr(sender, "task_consumer", None)
    names = {queue.name for queue in getattr(consumer, "queues", ())}
    beating_start(SPARK if SPARK_QUEUE in names else WORKER)


@worker_shutdown.connect(dispatch_uid="processes-worker-shutdown")
def _worker_stops(**kwargs):
    beating_stop()


@beat_init.connect(dispatch_uid="processes-beat-init")
def _scheduler_beats(**kwargs):
    # It stops on SIGTERM or Ctrl-C by SystemExit: beating's atexit says it stopped.
    beating_start(BEAT)


@task_prerun.connect(dispatch_uid="processes-task-prerun")
def _task_started(task_id=None, task=None, args=None, kwargs=None, **extra):
    work_started(task_id, work_text(getattr(task, "name", "task"), args, kwargs))


@task_postrun.connect(dispatch_uid="processes-task-postrun")
def _task_ended(task_id=None, **extra):
    work_ended(task_id)
