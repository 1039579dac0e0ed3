"""Every background run in one list: delivery runs, refreshes of the read models, compactions of
the lake and purges, each kept by its own app in a table of its own, with its state, heartbeat,
position and what it did. The kinds listed, their tables and how a row is described come from
the registry of leased runs (console.leases.kinds).

The list puts the runs in progress first (a purge waits queued before it runs), then the
finished ones, newest first, a page at a time. Each kind is read by its own id, newest first
(its primary key), and the kinds are merged by start time: a page's cursor is the last id shown
of each kind, so no run is shown twice or skipped however the kinds interleave, and a page costs
a few short index reads whatever the tables hold.

A running run is "stuck" when its heartbeat is older than LEASE_SECONDS: its worker stopped (the
sweepers treat it as dead from then on). It is "slow" when it has run longer than LEASE_SECONDS
and still beats: it works, only for long."""

import heapq
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from console import leases
from console.moments import span_text

_KINDS = {kind.name: kind for kind in leases.kinds(listed=True)}
KINDS = tuple(_KINDS)
# The states a run may be in, over every kind (each kind has some of them), and the two marks
# of a running one, which the list filters on as states.
STUCK, SLOW = "stuck", "slow"
STATES = ("queued", "running", "committed", "done", "skipped", "failed", "crashed")
MARKS = (STUCK, SLOW)

PAGE_SIZE = 50
PAGE_SIZE_MAX = 200
# The runs in progress are few (at most one per queue, one refresh, a compaction or two, a
# purge and a preview); more than this means something else is wrong, and the first page still
# answers quickly.
ACTIVE_MAX = 500
MAX_ID = 2**63 - 1
_CURSOR = re.compile(rf"^({'|'.join(KINDS)}):(\d{{1,19}})$")


class BadCursor(ValueError):
    """A `before` that no page of this list made."""


@dataclass
class Run:
    """One run of any kind, as the page and the API show it."""

    kind: str
    id: int
    state: str
    # What sort of run of its kind: a compaction's "state" or "history", a purge's "purge" or
    # "preview", a refresh's "full" or "incremental" (or "lock for purge 3": the refresh lock
    # held by another writer); "" for a delivery run.
    variant: str
    worker: str
    started_at: datetime | None
    heartbeat_at: datetime | None
    finished_at: datetime | None
    # Its position in the lake's events commits: a refresh folds those after from_commit up to
    # upto_commit; a compaction covers up to upto_commit; a purge read up to upto_commit.
    from_commit: int | None = None
    upto_commit: int | None = None
    queues: list = field(default_factory=list)
    claimed: int | None = None  # a delivery run's messages claimed
    outcomes: dict = field(default_factory=dict)  # a delivery run's: state -> messages
    changed: int | None = None  # a refresh's rows changed
    purged: int | None = None  # a purge's messages purged (a preview's: would purge)
    rows: int | None = None  # a compaction's rows written
    note: str = ""  # why a compaction was skipped
    error: str = ""
    created_at: datetime | None = None  # a purge's, for one still queued
    position: str = ""  # its position, in a few words
    did: str = ""  # what it did, in a few words (nothing while it runs, but what it claimed)
    # As of the moment the list was read (runs_page sets them).
    active: bool = False
    stuck: bool = False
    slow: bool = False
    heartbeat_age: timedelta | None = None
    duration: timedelta | None = None

    @property
    def since(self):
        """When it started, or was asked for if it has not."""
        return self.started_at or self.created_at

    @property
    def heartbeat_age_text(self):
        return span_text(self.heartbeat_age)

    @property
    def duration_text(self):
        return span_text(self.duration)


def _shown(kind, row):
    return Run(
        kind=kind.name,
        id=row.id,
        state=row.status,
        worker=row.worker,
        started_at=row.started_at,
        heartbeat_at=row.heartbeat_at,
        finished_at=row.finished_at,
        error=row.error,
        **row.described(),
    )


def cursor_parse(text):
    """{kind: id} from a `before` (as runs_page makes it: "delivery:12,purge:3"), or
    BadCursor."""
    cursor = {}
    for part in text.split(","):
        found = _CURSOR.match(part)
        if found is None or found[1] in cursor or not 0 < int(found[2]) <= MAX_ID:
            raise BadCursor("this is not a page of the runs")
        cursor[found[1]] = int(found[2])
    return cursor


def _cursor_text(cursor):
    return ",".join(f"{kind}:{cursor[kind]}" for kind in KINDS if kind in cursor)


@dataclass
class RunPage:
    rows: list  # Run, the runs in progress first (first page only), then the finished ones
    next_before: str | None  # `before` for the next (older) page


def _marked(run, now):
    """`run` with what the moment `now` says of it: in progress, stuck or slow, its heartbeat's
    age and how long it has run (so far, while it runs)."""
    lease = timedelta(seconds=settings.LEASE_SECONDS)
    run.active = run.state in _KINDS[run.kind].active
    running = run.state == "running"
    if run.heartbeat_at is not None:
        run.heartbeat_age = max(now - run.heartbeat_at, timedelta(0))
    if run.started_at is not None:
        run.duration = max((run.finished_at or now) - run.started_at, timedelta(0))
    run.stuck = running and run.heartbeat_age is not None and run.heartbeat_age > lease
    run.slow = running and not run.stuck and run.duration is not None and run.duration > lease
    return run


def _order(run):
    """Newest first; among runs started at the same moment, by kind, then newest id."""
    since = run.since.timestamp() if run.since else 0
    return (-since, KINDS.index(run.kind), -run.id)


def _active(kinds, state, now):
    rows = []
    for kind in kinds:
        spec = _KINDS[kind]
        statuses = [s for s in spec.active if state in ("", s, *MARKS)]
        if statuses:
            found = spec.model.objects.filter(status__in=statuses).order_by("-id")[:ACTIVE_MAX]
            rows.extend(_marked(_shown(spec, r), now) for r in found)
    if state == STUCK:
        rows = [r for r in rows if r.stuck]
    elif state == SLOW:
        rows = [r for r in rows if r.slow]
    return sorted(rows, key=_order)[:ACTIVE_MAX]


def _finished(kinds, state, cursor, size, now):
    """The next `size` finished runs after `cursor`, newest first, and the cursor after them
    (None at the end)."""
    streams = []
    for kind in kinds:
        spec = _KINDS[kind]
        statuses = [s for s in spec.finished if state in ("", s)]
        if not statuses:
            continue
        found = spec.model.objects.filter(status__in=statuses)
        if kind in cursor:
            found = found.filter(id__lt=cursor[kind])
        streams.append([_marked(_shown(spec, r), now) for r in found.order_by("-id")[: size + 1]])
    # Each stream is newest first by id; merged by start time, each run comes once.
    merged = heapq.merge(*streams, key=_order)
    rows = [run for _, run in zip(range(size), merged, strict=False)]
    following = dict(cursor)
    for run in rows:
        following[run.kind] = min(following.get(run.kind, MAX_ID + 1), run.id)
    more = sum(len(s) for s in streams) > len(rows)
    return rows, _cursor_text(following) if more else None


def runs_page(*, kind="", state="", before=None, size=PAGE_SIZE, now=None):
    """A page of runs of `kind` (or every kind) in `state` (or any; "stuck" and "slow" are
    running runs so marked). The first page (no `before`) starts with every run in progress;
    then the finished ones, newest first, `size` of them. Raises BadCursor for a `before` this
    list never made."""
    now = now or timezone.now()
    kinds = [kind] if kind else list(KINDS)
    cursor = cursor_parse(before) if before else {}
    rows = [] if cursor else _active(kinds, state, now)
    if state in ("running", "queued", *MARKS):
        return RunPage(rows=rows, next_before=None)
    finished, following = _finished(kinds, state, cursor, size, now)
    return RunPage(rows=rows + finished, next_before=following)
