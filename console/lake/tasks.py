"""The lake's Celery task: compaction (the state snapshot, the history) on the spark worker.

Its name is kept from when every task lived in workers.tasks: the routes (workers.celery) and
tasks already waiting in a broker name it so."""

from celery import shared_task

from console.lake.execution import lake_history_compact_if_due, lake_state_compact_if_due


@shared_task(
    name="workers.tasks.lake_compact_task",
    soft_time_limit=1700,
    time_limit=1800,
    ignore_result=True,
)
def lake_compact_task():
    """Fold event commits into a new state snapshot, and into a new history generation, when
    enough have piled up. Returns the new snapshot's commit id, or None."""
    snapshot = lake_state_compact_if_due()
    lake_history_compact_if_due()
    return snapshot.id if snapshot else None
