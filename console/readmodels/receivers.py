"""The read models follow the lake: every events commit they have not folded asks for a refresh
once it is visible."""

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.dispatch import receiver

from console.lake.signals import events_to_fold
from console.readmodels.tasks import browse_refresh_task

# Commits closer together than this ask for one refresh between them, not one each: a burst of
# API ingests must not queue thousands of Spark jobs ahead of the delivery runs. The refresh
# under way when a request is skipped asks for the next as it ends (read_models_refresh); beat's
# periodic refresh picks up whatever else is left.
ENQUEUE_DEBOUNCE_SECONDS = 2
_ENQUEUED_KEY = "browse:refresh-enqueued"


@receiver(events_to_fold, dispatch_uid="readmodels.refresh_on_commit")
def _refresh_on_commit(sender, follow_up=False, **kwargs):
    # robust: a broker that is down must not fail a commit that already happened.
    transaction.on_commit(lambda: refresh_enqueue(debounce=not follow_up), robust=True)


def refresh_enqueue(*, debounce=True):
    """Ask the spark worker for a refresh; a no-op when REFRESH_ON_COMMIT is off. `debounce`
    off: a refresh that ends with commits left to fold asks for the next (one a refresh, so no
    burst), whose own requests may have been debounced or found the refresh's lock held."""
    if not settings.REFRESH_ON_COMMIT:
        return
    if debounce and not cache.add(_ENQUEUED_KEY, 1, timeout=ENQUEUE_DEBOUNCE_SECONDS):
        return
    browse_refresh_task.delay()
