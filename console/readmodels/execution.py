"""The refresh of the read models, run under the refresh lock: the Spark job
(workers.jobs.refresh) folds the new lake commits, then one DB transaction loads its output in
bulk (console.readmodels.services) and moves the cursor.

A refresh holds the refresh lock (one RUNNING row) and a heartbeat (console.leases); one whose
heartbeat stopped is declared failed by the next, which simply does the work again: the cursor
only moves in the transaction that loads the rows.
"""

import logging
import shutil
import time
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from console import leases
from console.lake.models import LakeCommit
from console.lake.selectors import lake_history_inputs, lake_paths
from console.lake.services import lake, lake_commit_lock
from console.lake.signals import events_to_fold
from console.readmodels.models import FoldedCommit, RefreshRun
from console.readmodels.oldest import quarantine_oldest_keep
from console.readmodels.selectors import read_models_folded_upto
from console.readmodels.services import inflow_add, read_models_load
from workers.logcontext import log_context

log = logging.getLogger(__name__)


def _run_start():
    """Take the refresh lock: one RUNNING row (the constraint one_running_refresh). What the
    refresh folds is read after this, under the lock (`_plan`). None when another holds it."""
    # A refresh whose heartbeat stopped is dead: its lock is released, so the work is done again
    # (the sweeper does it too: a quiet system may start no refresh for long).
    leases.sweep_stale(RefreshRun)
    try:
        with transaction.atomic():
            return leases.start(RefreshRun)
    except IntegrityError:
        return None  # another refresh holds the lock


class AlreadyFolded(Exception):
    """A refresh was about to fold an events commit that an earlier one folded: the database
    refused it (FoldedCommit), and nothing of the refresh was loaded."""


@dataclass
class Plan:
    """What one refresh takes in, read under the refresh lock: its starting position (the newest
    committed refresh's), every events commit listed then, those after the position (`taken`:
    their flows are counted, and each is recorded as folded) and, among them, those whose
    events it folds into the states (`new`: all but those whose writer applied them itself)."""

    full: bool
    cursor: int | None
    history: object  # console.lake.selectors.HistoryInputs
    commits: list  # [(id, path)] of every events commit, in id order
    taken: list  # [(id, path)]
    new: list  # [(id, path, rows)]

    @property
    def upto(self):
        return self.commits[-1][0] if self.commits else None


def _plan(*, full):
    """The position and the commits to take in. Read under the lock: a refresh that committed
    between a read of the position and the taking of the lock made the next one fold the same
    commits again (counting the messages they delivered at first try twice)."""
    cursor = read_models_folded_upto()
    full = full or cursor is None
    # Read before the events commits are listed: a generation committed in between is not
    # used, and the commits it holds are read as events commits instead.
    history = lake_history_inputs()
    listed = list(
        LakeCommit.objects.filter(dataset="events", retired=False)
        .order_by("id")
        .values_list("id", "path", "views_applied", "row_count")
    )
    taken = [(i, p, applied, n) for i, p, applied, n in listed if full or i > cursor]
    return Plan(
        full=full,
        cursor=cursor,
        history=history,
        commits=[(i, p) for i, p, _, _ in listed],
        taken=[(i, p) for i, p, _, _ in taken],
        # A commit whose writer updated the read models itself needs no folding (its events
        # still count in every message's history and in the queue counts).
        new=[(i, p, n) for i, p, applied, n in taken if full or not applied],
    )


def _has_new_commits():
    """Anything for an incremental refresh to take in? A cheap look before the lock is taken,
    so that beat's ticks with nothing new leave no trace; the refresh reads again under it."""
    cursor = read_models_folded_upto()
    if cursor is None:
        return True
    return LakeCommit.objects.filter(dataset="events", retired=False, id__gt=cursor).exists()


def _run_release(run):
    """Let go of a lock that found nothing to do: no row is left for a refresh that did
    nothing."""
    RefreshRun.objects.filter(id=run.id, status=RefreshRun.RUNNING).delete()


def read_models_refresh(*, full=False, spark=None):
    """Fold the events commits made since the last refresh (all of them when `full`, or when
    nothing was ever refreshed) into the read models.

    Returns the committed RefreshRun; None when there was nothing new, or when another refresh
    holds the lock (the next tick of beat comes back for what it leaves). Raises AlreadyFolded
    if it was about to fold a commit a second time (the run is recorded as failed)."""
    from console.spark import spark_from_settings

    if not full and not _has_new_commits():
        return None
    # The session before the lock and the plan: a refresh that waited for a starting JVM (the
    # first after a start) takes in the commits made meanwhile, not only those it was asked for.
    spark = spark or spark_from_settings()
    run = _run_start()
    if run is None:
        log.info("a refresh is already in progress; this one is skipped")
        return None
    with log_context(run_id=f"refresh:{run.id}"):
        return _run_refresh(run, full=full, spark=spark)


def _run_refresh(run, *, full, spark):
    """A refresh that holds the lock: plan, fold, load."""
    from workers.jobs.refresh import RefreshParams, flows_only, run_refresh

    try:
        plan = _plan(full=full)
    except Exception as exc:
        leases.fail(RefreshRun, run.id, f"{exc.__class__.__name__}: {exc}")
        raise
    if not plan.full and not plan.taken:
        _run_release(run)  # another refresh took them in meanwhile
        return None
    RefreshRun.objects.filter(id=run.id).update(
        full=plan.full, from_commit=None if plan.full else plan.cursor, upto_commit=plan.upto
    )
    run.refresh_from_db()
    store = lake()
    staging = store.new_dir("refresh-staging", f"refresh{run.id}")
    params = RefreshParams(
        full=plan.full,
        event_paths=store.paths([p for i, p in plan.commits if i > plan.history.covers_upto]),
        new_event_paths=store.paths([p for _, p, _ in plan.new]),
        message_paths=store.paths(lake_paths(dataset="messages")),
        out_dir=store.path(staging),
        generations=[(store.path(g.path), g.buckets, g.rows) for g in plan.history.generations],
        new_event_rows=sum(n for _, _, n in plan.new),
        flow_event_paths=store.paths([p for _, p in plan.taken]),
    )
    heartbeat = leases.Heartbeat(RefreshRun, run.id)
    heartbeat.start()
    try:
        started = time.perf_counter()
        try:
            result = run_refresh(spark, params)
        finally:
            heartbeat.stop()
        folded = time.perf_counter()
        won = _load(
            run,
            params.out_dir,
            full=plan.full,
            folds=[i for i, _ in plan.taken],
            changed=result.indexed + result.gone,
            flows_only=flows_only(params),
        )
        log.info(
            "refresh %s: %s affected, %s indexed, %s gone, %s groups; spark %.1f s, load %.1f s",
            run.id,
            result.affected,
            result.indexed,
            result.gone,
            result.groups,
            folded - started,
            time.perf_counter() - folded,
        )
    except AlreadyFolded as exc:
        log.error("refresh %s refused: %s", run.id, exc)
        leases.fail(RefreshRun, run.id, str(exc))
        raise
    except Exception as exc:
        log.exception("refresh %s failed", run.id)
        leases.fail(RefreshRun, run.id, f"{exc.__class__.__name__}: {exc}")
        raise
    finally:
        shutil.rmtree(params.out_dir, ignore_errors=True)
    if not won:
        log.warning(
            "refresh %s lost its lease before loading; its work is left to the next", run.id
        )
    _next_refresh_ask(plan.upto)
    if won:
        quarantine_oldest_keep()  # the counts it moved go with their oldest quarantined message
    run.refresh_from_db()
    return run


def _folds_record(run, folds, *, full):
    """Record the commits this refresh took in, in its load's transaction. The primary key
    refuses a commit taken in before (AlreadyFolded). A full refresh folds every commit again
    from nothing, so it starts the record anew."""
    if full:
        FoldedCommit.objects.all().delete()
    try:
        with transaction.atomic():
            FoldedCommit.objects.bulk_create(
                [FoldedCommit(commit_id=i, run_id=run.id) for i in folds], batch_size=5000
            )
    except IntegrityError:
        twice = FoldedCommit.objects.filter(commit_id__in=folds).order_by("commit_id").first()
        where = f"refresh {twice.run_id}" if twice else "an earlier refresh"
        commit = twice.commit_id if twice else "?"
        raise AlreadyFolded(
            f"events commit {commit} was already folded by {where}; refresh {run.id} "
            f"started from commit {run.from_commit} and would count its messages twice"
        ) from None


def _next_refresh_ask(upto):
    """Ask for the next refresh when events commits landed after those this one read: their
    own requests were skipped while this one held the lock (or debounced), and would otherwise
    wait for beat's next refresh. Checked after the load's transaction, so a commit either
    finds the lock free or is seen here."""
    newer = LakeCommit.objects.filter(dataset="events", views_applied=False)
    if upto is not None:
        newer = newer.filter(id__gt=upto)
    if newer.exists():
        events_to_fold.send(sender=RefreshRun, follow_up=True)


def _load(run, out_dir, *, full, folds, changed, flows_only=False):
    """Everything in one transaction, which also marks the run committed (and so moves the
    cursor) and records the commits it takes in (`folds`). Returns False if the run lost its
    lease meanwhile: nothing is written then. `flows_only`: the job wrote the flows alone
    (workers.jobs.refresh.flows_only), the rest of the read models stays as it is."""
    with transaction.atomic():
        if not leases.finish(RefreshRun, run.id, status=RefreshRun.COMMITTED, changed=changed):
            return False
        _folds_record(run, folds, full=full)
        _applied_meanwhile_refold(run.upto_commit)
        if flows_only:
            inflow_add(f"{out_dir}/inflow", full=False)
        else:
            read_models_load(out_dir, full=full)
    return True


def _applied_meanwhile_refold(upto):
    """A writer that updated the read models itself after this refresh read the lake may have
    had its rows overwritten by this load, computed from older state: such commits are folded
    again by the next refresh. The lake commit lock keeps a commit from landing between this
    check and the load."""
    lake_commit_lock()
    meanwhile = LakeCommit.objects.filter(dataset="events", views_applied=True)
    if upto is not None:
        meanwhile = meanwhile.filter(id__gt=upto)
    if meanwhile.update(views_applied=False, handed_back=True):
        events_to_fold.send(sender=RefreshRun)
