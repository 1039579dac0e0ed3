"""Each queue's messages by state, for the queues page and GET /api/v1/queues.

The read models count them (QueueStat), and console.readmodels is a layer above the queues
(pyproject.toml, docs/architecture.md): console.queues may not import it. So the queues say here
what they need, and the read models hand it over when Django starts
(console/readmodels/queue_counts.py, imported by that app's ready()). The import runs one way,
readmodels -> queues, like every other."""

from django.core.exceptions import ImproperlyConfigured

_per_queue = None


def provide(per_queue):
    """Called once, by console.readmodels at start-up. `per_queue()` answers {queue name:
    (messages by state [(state, n)] in lifecycle order, when they were counted)} for every queue
    the read models hold counts of, deleted queues included."""
    global _per_queue
    _per_queue = per_queue


def per_queue():
    if _per_queue is None:
        # Only when console.readmodels is not installed: say so, rather than show no counts.
        raise ImproperlyConfigured("console.queues reads its counts from console.readmodels")
    return _per_queue()
