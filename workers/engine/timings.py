"""How long handlers took, per queue, as a histogram: for the metrics (console.metrics exports
it as antidote_handler_duration_seconds).

An isolation batch's child times each call it makes (from the call to its return: a deferred
outcome's wait is not the handler's) and hands its batch's counts back with its outcome codes
(workers.engine.isolation). A partition adds its batches up per queue and, when the run gives it
a folder, writes them there as one small file named after the partition: a task that Spark runs
again overwrites its own file, so the driver, reading the folder after the job, counts each
call once. Calls in a batch whose child died are not timed: their batch's counts die with it."""

import bisect
import json
import os
from pathlib import Path

# Upper bounds of the buckets, in seconds: a handler that posts to a service takes milliseconds,
# a slow one seconds; past HANDLER_TIMEOUT_SECONDS (300 s by default) it is killed.
HANDLER_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
SLOTS = len(HANDLER_BUCKETS) + 1  # the last: longer than the last bound


def slot(seconds):
    """The bucket a call of `seconds` falls in: the first whose bound is at least that long."""
    return bisect.bisect_left(HANDLER_BUCKETS, seconds)


class HandlerTimes:
    """{queue: (counts per slot, sum of seconds)}, added to batch by batch."""

    def __init__(self, queues=None):
        self.queues = {
            q: ([int(n) for n in t["counts"]], float(t["sum"])) for q, t in (queues or {}).items()
        }

    def add(self, queue, counts, seconds):
        if not any(counts):
            return
        held, total = self.queues.get(queue, ([0] * SLOTS, 0.0))
        self.queues[queue] = ([a + b for a, b in zip(held, counts, strict=True)], total + seconds)

    def merge(self, other):
        for queue, (counts, seconds) in other.queues.items():
            self.add(queue, counts, seconds)

    def as_dict(self):
        """What a run's outcomes keep: {queue: {"counts": [...], "sum": seconds}}."""
        return {q: {"counts": c, "sum": round(s, 6)} for q, (c, s) in sorted(self.queues.items())}


def times_write(times, folder, partition):
    """Write one partition's times into `folder`, whole or not at all."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"part-{partition:05d}.json"
    partial = folder / f".{final.name}.{os.getpid()}"
    partial.write_text(json.dumps(times.as_dict()))
    os.replace(partial, final)


def times_read(folder):
    """Every partition's times in `folder`, added up (none when it does not exist)."""
    times = HandlerTimes()
    for path in sorted(Path(folder).glob("part-*.json")) if folder else ():
        times.merge(HandlerTimes(json.loads(path.read_text())))
    return times
