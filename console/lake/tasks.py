"""The lake's Celery task: compaction (the state snapshot, the history) on the spark worker."""

from console.celery_task import console_task
from console.lake.execution import lake_history_compact_if_due, lake_state_compact_if_due


@console_task("workers.tasks.lake_compact_task", soft_time_limit=1700, time_limit=1800)
def lake_compact_task():
    """Fold event commits into a new state snapshot, and into a new history generation, when
    enough have piled up. Returns the new snapshot's commit id, or None."""
    snapshot = lake_state_compact_if_due()
    lake_history_compact_if_due()
    return snapshot.id if snapshot else None
