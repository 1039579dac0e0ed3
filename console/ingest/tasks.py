"""The inbox's Celery task, on the default worker.

Its name is kept from when every task lived in workers.tasks: beat's schedule (workers.celery)
and tasks already waiting in a broker name it so."""

from celery import shared_task

from console.ingest.services import inbox_scan


@shared_task(
    name="workers.tasks.inbox_scan_task", soft_time_limit=1700, time_limit=1800, ignore_result=True
)
def inbox_scan_task():
    """Take the inbox folder's files in. Returns how many files were processed."""
    return len(inbox_scan())
