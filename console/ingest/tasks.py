"""Ingest's Celery tasks, on the default worker: the inbox's scan and the demo's fill."""

from console.celery_task import console_task
from console.ingest.demo import demo_fill_step
from console.ingest.services import inbox_scan


@console_task("workers.tasks.inbox_scan_task", soft_time_limit=1700, time_limit=1800)
def inbox_scan_task():
    """Take the inbox folder's files in. Returns how many files were processed."""
    return len(inbox_scan())


@console_task("workers.tasks.demo_fill_task", soft_time_limit=60, time_limit=90)
def demo_fill_task():
    """Send the demo's next chunk, then ask for the one after it a few seconds later. Not
    retried: a lost task leaves the fill where it was, and the next `seed_demo` (`make run`)
    takes it up again. Returns how many seconds until the next chunk, or None when done."""
    wait = demo_fill_step()
    if wait is not None:
        demo_fill_task.apply_async(countdown=wait)
    return wait


def demo_fill_enqueue():
    """Hand the demo's fill to the default worker."""
    demo_fill_task.delay()
