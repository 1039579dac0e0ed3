"""Overlaps: which of a request's frozen messages other open requests hold too.

Nothing stops two requests from freezing the same messages. Whichever runs later finds them
decided already and skips them, and until now that showed only then, as "skipped". The approver
is told before approving: how many of the frozen messages other open requests (not in a final
status) hold, and which requests.

Every frozen id file is sorted, so one pass over this request's ids a batch at a time, reading
each other request's ids only up to the same id, counts what they share: linear in the files'
sizes, with about one batch of each file in memory at a time, however large the files. Only the
newest COMPARED_MAX other open requests are compared, and the answer says how many were not."""

import os
from dataclasses import dataclass, field

import pyarrow.compute as pc
import pyarrow.parquet as pq

from console.decisions.models import ActionRequest as R
from console.lake.services import lake

# Requests that may still act on their messages: every status but the final ones.
OPEN = tuple(status for status, _ in R.STATUSES if status not in R.FINAL)
# Compared with the newest this many other open requests: each one is a file read.
COMPARED_MAX = 50
BATCH = 10_000


class Unsorted(ValueError):
    """An id stream that is not in code-point order: merging it would miss what it shares
    without saying so. `key` names it (None: the request's own ids)."""

    def __init__(self, key):
        super().__init__(f"the ids of {key or 'the request'} are not in code-point order")
        self.key = key


class _Stream:
    """A sorted id stream read a batch at a time (pyarrow string arrays). It hands out what
    lies up to an id and keeps the rest for the next call, checking its order as it reads."""

    def __init__(self, batches, key):
        self._batches = iter(batches)
        self._key = key
        self._rest = None  # read, not handed out yet
        self._last = None  # the last id read: the order holds across batches too
        self.done = False

    def next_batch(self):
        """The next batch, or None at the end."""
        for batch in self._batches:
            if len(batch):
                self._check(batch)
                return batch
        self.done = True
        return None

    def _check(self, batch):
        if self._last is not None and batch[0].as_py() < self._last:
            raise Unsorted(self._key)
        if (
            len(batch) > 1
            and not pc.all(pc.less_equal(batch.slice(0, len(batch) - 1), batch.slice(1))).as_py()
        ):
            raise Unsorted(self._key)
        self._last = batch[-1].as_py()

    def upto(self, last):
        """The ids up to `last` not handed out yet, a piece of at most a batch at a time."""
        while True:
            if self._rest is None or not len(self._rest):
                self._rest = self.next_batch()
                if self._rest is None:
                    return
            # Sorted: the ones up to `last` are the first n.
            n = pc.sum(pc.less_equal(self._rest, last)).as_py() or 0
            if n:
                yield self._rest.slice(0, n)
            self._rest = self._rest.slice(n)
            if len(self._rest):
                return  # the rest lies past `last`


def shared_counts(mine, others):
    """(total, {key: shared}): how many ids of `mine` are in at least one of `others`, and in
    each. `mine` and each of `others` ({key: batches}) are the batches (pyarrow string arrays)
    of one id set sorted by code point. Raises Unsorted, naming the stream that is not."""
    streams = {key: _Stream(batches, key) for key, batches in others.items()}
    shared = dict.fromkeys(streams, 0)
    total = 0
    own = _Stream(mine, None)
    # Once every other stream is read to its end, the rest of `mine` can share nothing.
    while not all(stream.done for stream in streams.values()):
        batch = own.next_batch()
        if batch is None:
            break
        last = batch[-1].as_py()
        anywhere = None
        for key, stream in streams.items():
            found = None
            for piece in stream.upto(last):
                hit = pc.is_in(batch, value_set=piece)
                found = hit if found is None else pc.or_(found, hit)
            if found is not None:
                shared[key] += found.true_count
                anywhere = found if anywhere is None else pc.or_(anywhere, found)
        if anywhere is not None:
            total += anywhere.true_count
    return total, shared


@dataclass(frozen=True)
class Overlap:
    request_id: int
    status: str
    shared: int  # of the request's frozen messages, how many this other request holds too


@dataclass(frozen=True)
class Overlaps:
    total: int = 0  # of the request's frozen messages, how many another open request holds
    rows: list = field(default_factory=list)  # Overlap of each that shares some, by id
    compared: int = 0  # other open requests compared
    not_compared: int = 0  # older open requests past COMPARED_MAX, not compared
    unknown: list = field(default_factory=list)  # ids of others that could not be compared
    error: str = ""  # why the request's own ids could not be compared; "" when they were


def _id_arrays(path, batch_size):
    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size):
        yield batch.column(0)


def request_overlaps(*, request, limit=None, batch_size=BATCH):
    """What `request`'s frozen messages share with the newest `limit` (COMPARED_MAX) other
    open requests."""
    limit = COMPARED_MAX if limit is None else limit
    open_others = R.objects.filter(status__in=OPEN).exclude(id=request.id)
    others = list(open_others.order_by("-id").only("id", "status", "ids_path")[:limit])
    not_compared = open_others.count() - len(others) if len(others) == limit else 0
    path = lake().path(request.ids_path)
    if not os.path.exists(path):
        return Overlaps(error="its frozen ids are not in the lake")
    return overlaps_with(
        lambda: _id_arrays(path, batch_size),
        others,
        not_compared=not_compared,
        batch_size=batch_size,
    )


def overlaps_with(mine, others, *, not_compared=0, batch_size=BATCH):
    """What the ids of `mine()` (a fresh iterable of sorted string arrays at each call) share
    with the frozen sets of `others` (open requests), as Overlaps. Another request whose file is
    missing or not in code-point order is left out and named in `unknown`."""
    store = lake()
    paths = {o.id: store.path(o.ids_path) for o in others}
    unknown = sorted(key for key, path in paths.items() if not os.path.exists(path))
    readable = {key: path for key, path in paths.items() if key not in unknown}
    while True:
        try:
            total, shared = shared_counts(
                mine(), {key: _id_arrays(path, batch_size) for key, path in readable.items()}
            )
            break
        except Unsorted as exc:
            if exc.key is None:
                return Overlaps(error="its frozen ids are not in code-point order")
            # Compare again without it: what the others share is still told exactly.
            unknown = sorted([*unknown, exc.key])
            del readable[exc.key]
    rows = [
        Overlap(request_id=o.id, status=o.status, shared=shared[o.id])
        for o in sorted(others, key=lambda o: o.id)
        if shared.get(o.id)
    ]
    return Overlaps(
        total=total, rows=rows, compared=len(others), not_compared=not_compared, unknown=unknown
    )
