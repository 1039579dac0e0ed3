"""Every background run in one list: delivery runs, refreshes of the read models, compactions of
the lake and purges, each kept by its own app in a table of its own, with its state, heartbeat,
position and what it did.

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

from console.delivery.models import DeliveryRun
from console.lake.models import CompactionRun
from console.moments import span_text
from console.readmodels.models import RefreshRun
from console.retention.models import PurgeRun

DELIVERY, REFRESH, COMPACTION, PURGE = "delivery", "refresh", "compaction", "purge"
KINDS = (DELIVERY, REFRESH, COMPACTION, PURGE)
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

    @property
    def position(self):
        """Its position, in a few words."""
        if self.kind == REFRESH:
            if self.variant.startswith("lock for "):
                return "none: refreshes wait while it is held"
            if self.variant == "full":
                return f"all events commits, up to {_n(self.upto_commit)}"
            return f"events commits after {_n(self.from_commit)}, up to {_n(self.upto_commit)}"
        if self.kind == COMPACTION:
            return f"covers up to events commit {_n(self.upto_commit)}"
        if self.kind == PURGE:
            where = f" in {', '.join(self.queues)}" if self.queues else ""
            if self.upto_commit is None:
                return f"not read yet{where}"
            return f"events up to commit {self.upto_commit}{where}"
        claimed = f"; {self.claimed} claimed" if self.claimed is not None else ""
        return f"{', '.join(self.queues) or 'no queue'}{claimed}"

    @property
    def did(self):
        """What it did, in a few words (nothing while it runs, except what it claimed)."""
        if self.kind == DELIVERY:
            return ", ".join(f"{state} {n}" for state, n in sorted(self.outcomes.items()))
        if self.kind == REFRESH:
            return f"{self.changed} rows changed" if self.state == "committed" else ""
        if self.kind == PURGE:
            if self.state != "done":
                return ""
            verb = "would be purged" if self.variant == "preview" else "purged"
            return f"{self.purged} {verb}"
        parts = []
        if self.rows is not None:
            parts.append(f"{self.rows} rows")
        if self.note:
            parts.append(self.note)
        return "; ".join(parts)


def _n(commit):
    return "the start" if commit is None else str(commit)


def _delivery(run):
    states = (run.outcomes or {}).get("states") or {}
    return Run(
        kind=DELIVERY,
        id=run.id,
        state=run.status,
        variant="",
        worker=run.worker,
        started_at=run.started_at,
        heartbeat_at=run.heartbeat_at,
        finished_at=run.finished_at,
        queues=list(run.queues or []),
        claimed=run.claimed,
        outcomes={str(k): v for k, v in states.items()},
        error=run.error,
    )


def _refresh(run):
    variant = "full" if run.full else "incremental"
    if run.held_for:
        # A lock another writer holds (a purge, a counts check): no refresh runs meanwhile.
        variant = f"lock for {run.held_for}"
    return Run(
        kind=REFRESH,
        id=run.id,
        state=run.status,
        variant=variant,
        worker=run.worker,
        started_at=run.started_at,
        heartbeat_at=run.heartbeat_at,
        finished_at=run.finished_at,
        from_commit=run.from_commit,
        upto_commit=run.upto_commit,
        changed=run.changed,
        error=run.error,
    )


def _compaction(run):
    return Run(
        kind=COMPACTION,
        id=run.id,
        state=run.status,
        variant=run.kind,
        worker=run.worker,
        started_at=run.started_at,
        heartbeat_at=run.heartbeat_at,
        finished_at=run.finished_at,
        upto_commit=run.covers_upto,
        rows=run.rows,
        note=run.note,
        error=run.error,
    )


def _purge(run):
    return Run(
        kind=PURGE,
        id=run.id,
        state=run.status,
        variant="preview" if run.dry_run else "purge",
        worker=run.worker,
        started_at=run.started_at,
        heartbeat_at=run.heartbeat_at,
        finished_at=run.finished_at,
        upto_commit=run.events_upto,
        queues=[run.queue] if run.queue else [],
        purged=run.total,
        error=run.error,
        created_at=run.created_at,
    )


@dataclass(frozen=True)
class _Kind:
    model: type
    active: tuple  # its states in progress
    finished: tuple
    shown: object  # model row -> Run


_KINDS = {
    DELIVERY: _Kind(
        DeliveryRun,
        (DeliveryRun.RUNNING,),
        (DeliveryRun.COMMITTED, DeliveryRun.FAILED, DeliveryRun.CRASHED),
        _delivery,
    ),
    REFRESH: _Kind(
        RefreshRun, (RefreshRun.RUNNING,), (RefreshRun.COMMITTED, RefreshRun.FAILED), _refresh
    ),
    COMPACTION: _Kind(
        CompactionRun,
        (CompactionRun.RUNNING,),
        (CompactionRun.COMMITTED, CompactionRun.SKIPPED, CompactionRun.FAILED),
        _compaction,
    ),
    PURGE: _Kind(PurgeRun, PurgeRun.ACTIVE, (PurgeRun.DONE, PurgeRun.FAILED), _purge),
}


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
            rows.extend(_marked(spec.shown(r), now) for r in found)
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
        streams.append([_marked(spec.shown(r), now) for r in found.order_by("-id")[: size + 1]])
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
