"""The read models' counts in the order people read them, and each queue's, handed to
console.queues (console.queues.counts: a layer below, which may not import us). This app's
ready() imports this module once; the hand-over is its last line."""

from console.queues.counts import provide
from console.readmodels.models import QueueStat
from workers.engine.states import STATES


def state_counts(counts):
    """[(state, n)] in lifecycle order, then any state we do not know, for stable display."""
    counts = counts or {}
    known = [(s, int(counts.get(s, 0))) for s in STATES if s in counts]
    other = sorted((s, int(n)) for s, n in counts.items() if s not in STATES)
    return known + other


def per_queue():
    """{queue name: ([(state, n)], when counted)} for every queue with counts."""
    return {s.queue: (state_counts(s.counts), s.updated_at) for s in QueueStat.objects.all()}


provide(per_queue)
