"""Which processes run, as their heartbeats say: the Processes page, /api/v1/processes, the
dashboard's warning, `manage.py health`, and whoever exposes the heartbeats' ages (metrics).

A process is alive while its last beat is at most HEARTBEAT_STALE_SECONDS old, stale after that
(killed, hung, or cut off from the database), and stopped once it said so on a clean shutdown.
The broker sources' consumer runs one thread per source; each source keeps its own state and
heartbeat (console.queues), listed under it."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from console.moments import span_text
from console.processes.models import (
    BEAT,
    KIND_TITLES,
    KINDS,
    SOURCES,
    SPARK,
    WEB,
    WORKER,
    ProcessBeat,
)
from console.processes.services import KEEP
from console.queues.models import BrokerSource
from console.queues.selectors import source_status_list
from console.rows import from_row

ALIVE, STALE, STOPPED = "alive", "stale", "stopped"
STATES = (ALIVE, STALE, STOPPED)

# What stops when no process of a kind runs, and who starts it (the Procfile's names).
WHAT_STOPS = {
    WEB: "the console and its API do not answer",
    SPARK: "deliveries, refreshes and decisions are not running",
    WORKER: "sweeps, alerts and the inbox are not handled",
    BEAT: "nothing is scheduled: no delivery run, refresh or sweep starts",
    SOURCES: "no broker source is drained",
}


def stale_seconds():
    return settings.HEARTBEAT_STALE_SECONDS


@dataclass
class Process:
    kind: str
    host: str
    pid: int
    started_at: datetime
    beat_at: datetime
    stopped_at: datetime | None
    current: str
    state: str
    age: timedelta  # of its last beat, as of the moment it was read

    @property
    def kind_title(self):
        return KIND_TITLES[self.kind]

    @property
    def age_text(self):
        return span_text(self.age)


def _shown(row, now):
    age = max(now - row.beat_at, timedelta(0))
    if row.stopped_at is not None:
        state = STOPPED
    elif age > timedelta(seconds=stale_seconds()):
        state = STALE
    else:
        state = ALIVE
    return from_row(Process, row, state=state, age=age)


def process_list(*, now=None):
    """Every process that beat, or stopped, within the last day: by kind (the Procfile's order),
    then host and pid."""
    now = now or timezone.now()
    rows = ProcessBeat.objects.filter(beat_at__gte=now - KEEP)
    found = [_shown(row, now) for row in rows]
    return sorted(found, key=lambda p: (KINDS.index(p.kind), p.host, p.pid))


def process_heartbeat_ages(*, now=None):
    """{(kind, host, pid): seconds since its last beat} of every process that has not stopped
    (alive or stale): what a metrics endpoint exports, one gauge each."""
    return {
        (p.kind, p.host, p.pid): p.age.total_seconds()
        for p in process_list(now=now)
        if p.state != STOPPED
    }


def consumer_list(*, now=None):
    """Each broker source, as its consumer thread reports it (console.queues)."""
    return source_status_list(now=now)


def kinds_expected():
    """The kinds a deployment runs: all but the sources' consumer, which only runs when a broker
    source is enabled."""
    expected = [WEB, SPARK, WORKER, BEAT]
    if BrokerSource.objects.filter(enabled=True).exists():
        expected.append(SOURCES)
    return expected


@dataclass(frozen=True)
class Missing:
    kind: str
    last: Process | None  # the newest of its kind, stale or stopped; None if none reported
    text: str


def _missing_text(kind, last, now):
    title = KIND_TITLES[kind]
    if last is None:
        said = f"No {title} has reported yet"
    elif last.state == STOPPED:
        said = f"The {title} on {last.host} stopped {span_text(now - last.stopped_at)} ago"
    else:
        said = f"No {title} has reported for {span_text(last.age)}"
    return f"{said}: {WHAT_STOPS[kind]}. Start the Procfile's {kind} process."


def kinds_missing(*, kinds=None, now=None):
    """The kinds of `kinds` (kinds_expected() by default) that have no alive process, each with
    its newest process and a sentence that says what it means."""
    now = now or timezone.now()
    processes = process_list(now=now)
    missing = []
    for kind in kinds if kinds is not None else kinds_expected():
        of_kind = [p for p in processes if p.kind == kind]
        if any(p.state == ALIVE for p in of_kind):
            continue
        last = max(of_kind, key=lambda p: p.beat_at, default=None)
        missing.append(Missing(kind, last, _missing_text(kind, last, now)))
    return missing


def process_find(*, kind, host=None, pid=None, max_age, now=None):
    """The newest process of `kind` (on `host`, or any; with `pid`, if given) that has not
    stopped and beat within `max_age` seconds; None if there is none."""
    now = now or timezone.now()
    found = _where(
        ProcessBeat.objects.filter(
            kind=kind, stopped_at__isnull=True, beat_at__gte=now - timedelta(seconds=max_age)
        ),
        host=host,
        pid=pid,
    )
    row = found.order_by("-beat_at").first()
    return _shown(row, now) if row is not None else None


def process_last(*, kind, host=None, pid=None, now=None):
    """The process of `kind` (on `host`, or any; with `pid`, if given) that beat last, whatever
    its state."""
    found = _where(ProcessBeat.objects.filter(kind=kind), host=host, pid=pid)
    row = found.order_by("-beat_at").first()
    return _shown(row, now or timezone.now()) if row is not None else None


def _where(rows, *, host, pid):
    if host is not None:
        rows = rows.filter(host=host)
    if pid is not None:
        rows = rows.filter(pid=pid)
    return rows


def process_warnings(*, now=None):
    """What the dashboard and the Processes page warn of: the kinds expected with no alive
    process, but the web (the one that answers is alive; `manage.py health` checks it)."""
    return kinds_missing(kinds=[k for k in kinds_expected() if k != WEB], now=now)
