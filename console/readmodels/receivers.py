"""The read models follow the lake: every events commit they have not folded asks for a refresh
once it is visible."""

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.dispatch import receiver

from console.lake.signals import events_to_fold
from console.readmodels.tasks import browse_refresh_task

# Commits closer together than this ask for one refresh between them, not one each: a burst of
# API ingests must not queue thousands of Spark jobs ahead of the delivery runs. Beat's periodic
# refresh picks up whatever a skipped request would have.
ENQUEUE_DEBOUNCE_SECONDS = 2
_ENQUEUED_KEY = "browse:refresh-enqueued"


@receiver(events_to_fold, dispatch_uid="readmodels.refresh_on_commit")
def _refresh_on_commit(sender, **kwargs):
    # robust: a broker that is down must not fail a commit that already happened.
    transaction.on_commit(refresh_enqueue, robust=True)


def refresh_enqueue():
    """Ask the spark worker for a refresh; a no-op when REFRESH_ON_COMMIT is off."""
    if not settings.REFRESH_ON_COMMIT:
        return
    if not cache.add(_ENQUEUED_KEY, 1, timeout=ENQUEUE_DEBOUNCE_SECONDS):
        return
    browse_refresh_task.delay()
