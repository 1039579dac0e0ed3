"""Leased runs: long work that keeps its state in a console DB row (a delivery run, a decision's
execution, a lake query, a purge, a refresh, a compaction, a counts check) and holds it by a lease
renewed by heartbeat. A sweeper treats a running row whose heartbeat stopped as dead
(ARCHITECTURE: tasks may be lost, work may not).

Every kind of run inherits LeasedRun and goes through the operations here, written once:
`start` (a new running row) or `claim` (a waiting or dead one taken over), `heartbeat`, `finish`
and `fail` (only while the caller still holds the row), `stale` (the query for dead rows) and
`sweep_stale`. Each kind registers itself (`register`), with how the Runs page describes one of
its rows: the pages read `kinds()` rather than each table by name."""

import logging
import os
import socket
import threading
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection, models
from django.db.models import F, Q
from django.utils import timezone

log = logging.getLogger(__name__)

RUNNING = "running"
# A kind leased by beats (`lease_by_beats`) is dead after this many missed heartbeats rather
# than after LEASE_SECONDS: taking it over costs only work done again, never a message's count.
MISSED_BEATS = 3
# A waiting kind's run whose worker died this many times is given up: it may be what kills it.
MAX_ATTEMPTS = 3
ERROR_MAX = 5000


class LeaseLost(Exception):
    """The run is no longer the caller's (declared dead, and finished or taken over by another
    worker): stop, commit nothing."""


def worker_name():
    """This process, as the rows of the work it holds name it (host:pid)."""
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


def claim_token():
    """This process and a token unique to one claim (host:pid:token): a run that lost its lease
    cannot record its result over the claim that took it over, even in the same process."""
    return f"{worker_name()}:{uuid.uuid4().hex[:8]}"[:200]


def status_field(statuses=(), default=RUNNING):
    """A run's `status`, with its kind's choices (each kind has RUNNING among them)."""
    if default is None:
        return models.CharField(max_length=12, choices=statuses)
    return models.CharField(max_length=12, choices=statuses, default=default)


class Heartbeating(models.Model):
    """A row kept alive by a heartbeat: a leased run, or a broker source's consumer thread."""

    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class LeasedRun(Heartbeating):
    """A run held by a lease: its status, who holds it (`worker`: host:pid, with a claim's token
    for the kinds that are claimed), its heartbeat, when it started and finished, and why it
    failed."""

    RUNNING = RUNNING
    FAILED = "failed"
    # Its statuses in progress, and those it ends in (each kind says its own).
    ACTIVE = (RUNNING,)
    FINISHED = ()
    # Leased by MISSED_BEATS heartbeats rather than by LEASE_SECONDS (see MISSED_BEATS).
    lease_by_beats = False

    status = status_field()
    worker = models.CharField(max_length=200, blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        abstract = True

    def described(self):
        """What the Runs page shows of it besides its lease: variant, position, did, and the
        kind's own numbers (console.runs.selectors.Run). For the kinds the Runs page lists."""
        raise NotImplementedError


# --- The operations -------------------------------------------------------------------------------


def lease_seconds(model):
    """How long a running row of `model` lives without a heartbeat."""
    if model.lease_by_beats:
        return MISSED_BEATS * settings.HEARTBEAT_SECONDS
    return settings.LEASE_SECONDS


def stale(model, now=None):
    """The running rows of `model` whose heartbeat stopped (or never beat) a lease ago."""
    deadline = (now or timezone.now()) - timedelta(seconds=lease_seconds(model))
    return Q(status=model.RUNNING) & (Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=deadline))


def start(model, **fields):
    """A new running row of `model`, held by this process from now."""
    now = timezone.now()
    return model.objects.create(
        status=model.RUNNING, worker=worker_name(), started_at=now, heartbeat_at=now, **fields
    )


def claim(model, row_id, *, now=None, **fields):
    """For the kinds that wait their turn (QUEUED, `attempts`): take the row `row_id` if it is
    queued, or running with its heartbeat stopped and fewer than MAX_ATTEMPTS claims so far.
    Returns the claim's token (its `worker`), or None when someone else has it (or it is
    over)."""
    now = now or timezone.now()
    token = claim_token()
    claimable = Q(status=model.QUEUED) | (stale(model, now) & Q(attempts__lt=MAX_ATTEMPTS))
    won = (
        model.objects.filter(claimable, id=row_id)
        .order_by()
        .update(
            status=model.RUNNING,
            worker=token,
            started_at=now,
            heartbeat_at=now,
            attempts=F("attempts") + 1,
            **fields,
        )
    )
    # Nothing got updated: another worker got there first, or the run is over.
    return token if won == 1 else None


def _held(model, row_id, worker):
    held = model.objects.filter(id=row_id, status=model.RUNNING)
    return held if worker is None else held.filter(worker=worker)


def held(model, row_id, *, worker=None):
    """Does the row still run (held by `worker`, when given)?"""
    return _held(model, row_id, worker).exists()


def heartbeat(model, row_id, *, worker=None, **fields):
    """Renew the lease of a running row (held by `worker`, when given), with `fields`. False
    when the row is no longer running (or no longer the worker's)."""
    return _held(model, row_id, worker).update(heartbeat_at=timezone.now(), **fields) == 1


def finish(model, row_id, *, status, worker=None, error="", **fields):
    """Take a running row (held by `worker`, when given) out of RUNNING, to `status`, as its
    holder: its last heartbeat is its end. False when it had left RUNNING already (finished, or
    declared dead and taken over), in which case nothing is written."""
    now = timezone.now()
    return (
        _held(model, row_id, worker).update(
            status=status, finished_at=now, heartbeat_at=now, error=error[:ERROR_MAX], **fields
        )
        == 1
    )


def fail(model, row_id, error, *, worker=None, **fields):
    """`finish` as FAILED, with `error`."""
    return finish(model, row_id, status=model.FAILED, worker=worker, error=error, **fields)


def expired_error(row):
    return f"lease expired: no heartbeat since {row.heartbeat_at.isoformat()}"


def sweep_stale(model, *, now=None, status=None, leave=None):
    """Declare dead (`status`, FAILED by default) every running row of `model` whose heartbeat
    stopped. A row is taken only while it still runs with the heartbeat it was found with: one
    that beat meanwhile lives on. `leave(row, **fields)`, when given, takes a row out of RUNNING
    instead (and returns whether it did), for a kind that lets go of more than its row. Returns
    the rows declared dead."""
    now = now or timezone.now()
    dead = []
    for row in model.objects.filter(stale(model, now)):
        fields = {"status": status or model.FAILED, "finished_at": now, "error": expired_error(row)}
        if leave is not None:
            won = leave(row, **fields)
        else:
            won = model.objects.filter(
                id=row.id, status=model.RUNNING, heartbeat_at=row.heartbeat_at
            ).update(**fields)
        if won:
            dead.append(row)
    return dead


def sweep_lost(model, *, enqueue, finish_given_up, now=None, every=timedelta(minutes=1)):
    """For the kinds that wait their turn (QUEUED, `enqueued_at`, `attempts`): hand queued rows
    that waited longer than `every`, and running ones whose heartbeat stopped, to the broker
    again with `enqueue(row_id)` (at most once each `every`); give up on a row whose worker died
    MAX_ATTEMPTS times: `finish_given_up(row, error)`. Returns the ids handed over."""
    now = now or timezone.now()
    dead = stale(model, now)
    label = model._meta.verbose_name
    for row in model.objects.filter(dead, attempts__gte=MAX_ATTEMPTS):
        error = (
            f"given up after {row.attempts} attempts: the worker running it stopped each "
            f"time (last heartbeat {row.heartbeat_at.isoformat()})"
        )
        if finish_given_up(row, error):
            log.warning("%s %s: %s", label, row.id, error)
    not_lately = Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=now - every)
    due = model.objects.filter(Q(status=model.QUEUED) | dead, not_lately).values_list(
        "id", flat=True
    )
    handed = []
    for row_id in list(due):
        # One sweeper at a time wins each row.
        if not model.objects.filter(not_lately, id=row_id).update(enqueued_at=now):
            continue
        try:
            enqueue(row_id)
        except Exception:
            log.exception("%s %s could not be enqueued; the next sweep tries again", label, row_id)
            continue
        handed.append(row_id)
    return handed


# --- Heartbeat threads ----------------------------------------------------------------------------


class Beating(threading.Thread):
    """Calls `beat()` every `interval` seconds until stopped, in a daemon thread.

    Each beat takes a connection from the process's pool and gives it back at once: a heartbeat
    never holds one between beats, so it cannot be starved by, nor starve, the work it beats for
    (which may hold its own connection in a transaction for minutes). A beat that fails (the
    database away, no connection free in DB_POOL_TIMEOUT) is tried again at the next one."""

    def __init__(self, interval, *, name):
        super().__init__(daemon=True, name=name)
        self.interval = interval
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(self.interval):
            try:
                self.beat()
            except DatabaseError:
                log.warning("%s: heartbeat not written; trying again", self.name, exc_info=True)
            finally:
                connection.close()

    def beat(self):
        raise NotImplementedError

    def stop(self):
        self.stopped.set()
        self.join(timeout=self.interval + 5)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()


class Heartbeat(Beating):
    """Renews the lease of one running row of `model` every `interval` seconds (HEARTBEAT_SECONDS
    by default) until stopped. The lease outlasts several missed beats. With `owner` (the
    claim's token), it beats only while the row is the owner's, so a worker that lost the row to
    another never keeps it looking alive."""

    def __init__(self, model, row_id, interval=None, *, owner=None):
        interval = settings.HEARTBEAT_SECONDS if interval is None else interval
        super().__init__(interval, name=f"heartbeat-{model._meta.label}-{row_id}")
        self.model = model
        self.row_id = row_id
        self.owner = owner

    def beat(self):
        heartbeat(self.model, self.row_id, worker=self.owner)


# --- The kinds of run ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RunKind:
    """A kind of leased run, as the pages that list runs know it: its statuses in progress and
    those it ends in are its model's ACTIVE and FINISHED, a row says what it did (`described`)."""

    name: str  # as the Runs page and /api/v1/runs name it: "delivery"
    title: str  # "delivery run"
    model: type
    # Where the Runs page lists it among the kinds (None: not on the Runs page: it has its own).
    order: int | None = None

    @property
    def active(self):
        return self.model.ACTIVE

    @property
    def finished(self):
        return self.model.FINISHED


_kinds = {}


def register(name, model, *, title, order=None):
    """Make a kind of run known (each kind's models module registers its own)."""
    _kinds[name] = RunKind(name, title, model, order)


def kinds(*, listed=False):
    """Every kind registered, those the Runs page lists first in its order (`listed`: only
    those)."""
    found = sorted(_kinds.values(), key=lambda k: (k.order is None, k.order or 0, k.name))
    return [k for k in found if k.order is not None] if listed else found


def kind_of(model):
    """The kind whose rows are `model`'s, or None."""
    return next((k for k in _kinds.values() if k.model is model), None)
