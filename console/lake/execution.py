"""Compactions of the lake, run by tasks on the spark worker: a state snapshot (with its open
snapshot) or a history generation folded from the events commits, recorded as a CompactionRun
held by a heartbeat (console.leases) while Spark folds, and swapped in with one transaction
(console.lake.services records the commits)."""

import logging
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from console import leases
from console.lake.models import CompactionRun, LakeCommit, LakeRewrite
from console.lake.selectors import lake_newest
from console.lake.services import (
    lake,
    lake_commit_lock,
    lake_commit_record,
    lake_commits_retire,
    lake_history_dirs_delete,
)

log = logging.getLogger(__name__)


def _rewrite_under_way():
    return LakeRewrite.objects.filter(until__gt=timezone.now()).exists()


def _compaction_under_way(kind):
    """A compaction of this kind folds now, its heartbeat alive. Delivery runs that end together
    each find one due: a second would fold the same commits, hold a spark worker's thread and
    CPU as long, and be skipped at its commit (LAKE_CHANGED). The next run's check comes back
    for what is left."""
    running = CompactionRun.objects.filter(kind=kind, status=CompactionRun.RUNNING)
    return running.exclude(leases.stale(CompactionRun)).exists()


def _compaction_due(kind, commits, *, after, force):
    """A compaction of this kind folds `commits` new commits now: there is one at least, and
    `force`, or `after` of them at least and none of this kind under way."""
    if not commits:
        return False
    return force or (commits >= after and not _compaction_under_way(kind))


# --- Compaction records ---------------------------------------------------------------------------

# Why a compaction that folded was not committed.
LAKE_CHANGED = "the lake changed while it folded (a purge, or another compaction): not committed"
# Finished compactions kept: the runs page shows recent ones. A state compaction is due every
# COMPACT_AFTER_COMMITS events commits and a history one every HISTORY_COMPACT_AFTER_COMMITS,
# so without a bound the table would grow with every delivery run, for ever.
COMPACTIONS_KEPT = 10_000


def _compaction_start(*, kind, covers_upto, commits):
    """Record a compaction that starts folding; returns its id. Compactions whose heartbeat
    stopped are declared failed first, and the oldest finished ones beyond COMPACTIONS_KEPT
    forgotten."""
    lake_compactions_stale_fail()
    _compactions_forget()
    return leases.start(CompactionRun, kind=kind, covers_upto=covers_upto, commits=commits).id


def _compaction_end(run_id, *, status, error="", **fields):
    """Take a compaction out of RUNNING: committed, skipped or failed."""
    if run_id is not None:
        leases.finish(CompactionRun, run_id, status=status, error=error, **fields)


@contextmanager
def _compaction_failure_recorded(run_id):
    """A failure inside is recorded on the compaction, then raised again as it was: the caller
    (a task on the spark worker) sees what it saw before there was a record."""
    try:
        yield
    except Exception as exc:
        try:
            _compaction_end(
                run_id, status=CompactionRun.FAILED, error=f"{exc.__class__.__name__}: {exc}"
            )
        except Exception:
            # The database may be what failed: the original exception matters more.
            log.exception("compaction %s: its failure could not be recorded", run_id)
        raise


@contextmanager
def _compaction_heartbeat(run_id):
    """The compaction's heartbeat while Spark folds. Stopped before the commit's transaction,
    as a refresh stops its own: on SQLite the heartbeat's writes would wait for it."""
    if run_id is None:
        yield
        return
    with leases.Heartbeat(CompactionRun, run_id):
        yield


def lake_compactions_stale_fail(*, now=None):
    """Declare failed the compactions whose heartbeat stopped LEASE_SECONDS ago or more (their
    worker died: what they wrote was never committed, and the next one due folds the same
    commits). Returns how many. Each new compaction calls it; a sweeper may too."""
    return len(leases.sweep_stale(CompactionRun, now=now))


def _compactions_forget():
    """Delete the finished compactions older than the newest COMPACTIONS_KEPT."""
    oldest_kept = list(
        CompactionRun.objects.order_by("-id").values_list("id", flat=True)[
            COMPACTIONS_KEPT - 1 : COMPACTIONS_KEPT
        ]
    )
    if oldest_kept:
        CompactionRun.objects.filter(id__lt=oldest_kept[0]).exclude(
            status=CompactionRun.RUNNING
        ).delete()


# --- Compactions ---------------------------------------------------------------------------------


def lake_state_compact_if_due(*, force=False, spark=None):
    """Fold the newest snapshot and the event commits after it into a new state snapshot, and
    the newest open snapshot and the same event commits into a new open snapshot (only the
    messages that are not final: what a delivery run reads), and swap both in with one
    transaction. Returns the new state snapshot's commit, or None.

    The open snapshot is folded from the previous one, not from the whole state: its cost
    follows the messages in flight and the new events, not the lake's size. The first time (no
    open snapshot yet) it is taken from the new state snapshot. When due, it is recorded as a
    CompactionRun, with a heartbeat while Spark folds."""
    from console.lake.selectors import lake_due_inputs, lake_state_inputs
    from console.spark import spark_from_settings
    from workers.jobs.state import extract_events, extract_state, open_state

    if _rewrite_under_way():
        return None
    inputs = lake_state_inputs()
    commits = len(inputs.event_paths)
    if not _compaction_due(
        CompactionRun.STATE, commits, after=settings.COMPACT_AFTER_COMMITS, force=force
    ):
        return None
    run_id = _compaction_start(
        kind=CompactionRun.STATE,
        covers_upto=inputs.last_event_commit,
        commits=commits,
    )
    with _compaction_failure_recorded(run_id):
        due = lake_due_inputs(upto=inputs.last_event_commit)
        store = lake()
        path = store.new_dir("state", "snapshot")
        open_path = store.new_dir("open", "snapshot")
        with _compaction_heartbeat(run_id):
            session = spark or spark_from_settings()
            state = extract_state(
                session, store.paths(inputs.snapshot_paths), store.paths(inputs.event_paths)
            )
            state.write.parquet(store.path(path))
            rows = session.read.parquet(store.path(path)).count()
            if due.dataset == "open":
                folded = extract_state(
                    session, store.paths(due.snapshot_paths), store.paths(due.event_paths)
                )
            else:
                folded = extract_events(session, [store.path(path)])
            open_state(folded).write.parquet(store.path(open_path))
            open_rows = session.read.parquet(store.path(open_path)).count()
        with transaction.atomic():
            lake_commit_lock()
            if _rewrite_under_way() or _state_inputs_changed(inputs, due):
                # A purge rewrote what this snapshot was folded from (R15): committing it would
                # bring purged messages back. The next compaction folds the lake as it is now.
                for written in (path, open_path):
                    shutil.rmtree(store.path(written), ignore_errors=True)
                _compaction_end(run_id, status=CompactionRun.SKIPPED, note=LAKE_CHANGED, rows=rows)
                return None
            commit = lake_commit_record(
                dataset="state",
                path=path,
                row_count=rows,
                idempotency_key=f"state:upto:{inputs.last_event_commit}",
                covers_upto=inputs.last_event_commit,
            )
            lake_commit_record(
                dataset="open",
                path=open_path,
                row_count=open_rows,
                idempotency_key=f"open:upto:{inputs.last_event_commit}",
                covers_upto=inputs.last_event_commit,
            )
            retired = [inputs.snapshot_id] if inputs.snapshot_id is not None else []
            if due.dataset == "open":
                retired.append(due.snapshot_id)
            lake_commits_retire(ids=retired)
            # In the commit's transaction: the record says committed exactly when it is.
            _compaction_end(
                run_id, status=CompactionRun.COMMITTED, rows=rows, lake_commit=commit.id
            )
    return commit


def _state_inputs_changed(inputs, due):
    """Is the newest state or open snapshot, or any events commit after them, not what
    `inputs` and `due` (lake_due_inputs) read?"""
    if lake_newest("state") != inputs.snapshot_id:
        return True
    if lake_newest("open") != (due.snapshot_id if due.dataset == "open" else None):
        return True
    paths = set(inputs.event_paths) | set(due.event_paths)
    unchanged = LakeCommit.objects.filter(
        dataset="events", retired=False, path__in=list(paths)
    ).count()
    return unchanged != len(paths)


def lake_history_compact_if_due(*, force=False, spark=None):
    """Fold the events commits no history generation holds yet into a new generation, with the
    newest generations it absorbs (workers.jobs.history.merge_plan), and swap it in with one
    transaction. Due when HISTORY_COMPACT_AFTER_COMMITS events commits are outstanding (it runs
    where the state snapshot's compaction runs). Returns the new generation's commit, or None."""
    lake_history_dirs_delete()
    if _rewrite_under_way():
        return None
    fold = lake_history_fold(force=force, spark=spark)
    return lake_history_fold_commit(fold) if fold is not None else None


@dataclass
class HistoryFold:
    """A generation written and not committed yet, and what it was folded from."""

    inputs: object  # console.lake.selectors.HistoryInputs
    absorbed: list  # the generations it replaces
    path: str
    buckets: int
    rows: int
    files: int
    seconds: float
    run_id: int | None = None  # its CompactionRun


def lake_history_fold(*, force=False, spark=None):
    """Write the next history generation, when due (or `force`), without committing it: the
    first half of `lake_history_compact_if_due`. Returns a HistoryFold, or None."""
    from console.lake.selectors import lake_history_inputs
    from console.spark import spark_from_settings
    from workers.jobs.history import HistoryFoldParams, merge_plan, run_history_fold
    from workers.lake.history import buckets_for

    inputs = lake_history_inputs()
    commits = len(inputs.events)
    if not _compaction_due(
        CompactionRun.HISTORY, commits, after=settings.HISTORY_COMPACT_AFTER_COMMITS, force=force
    ):
        return None
    run_id = _compaction_start(
        kind=CompactionRun.HISTORY, covers_upto=inputs.events[-1][0], commits=commits
    )
    with _compaction_failure_recorded(run_id):
        new_rows = sum(rows for _, _, rows in inputs.events)
        absorbed = inputs.generations[merge_plan([g.rows for g in inputs.generations], new_rows) :]
        rows = new_rows + sum(g.rows for g in absorbed)
        buckets = buckets_for(rows)
        store = lake()
        path = store.new_dir("history", "generation")
        started = time.perf_counter()
        params = HistoryFoldParams(
            lake_root=str(store.root),
            events=[(i, p) for i, p, _ in inputs.events],
            # An empty generation (all its messages purged since) has nothing to read.
            generations=[g.path for g in absorbed if g.rows],
            out_dir=store.path(path),
            buckets=buckets,
            rows=rows,
        )
        try:
            with _compaction_heartbeat(run_id):
                result = run_history_fold(spark or spark_from_settings(), params)
        except Exception:
            # Invisible without a commit, but a half-written generation is only litter.
            shutil.rmtree(params.out_dir, ignore_errors=True)
            raise
    return HistoryFold(
        inputs=inputs,
        absorbed=absorbed,
        path=path,
        buckets=buckets,
        rows=result.rows,
        files=result.files,
        seconds=time.perf_counter() - started,
        run_id=run_id,
    )


def lake_history_fold_commit(fold):
    """Swap a written generation in, retiring those it absorbed, if what it was folded from is
    still what readers see. Returns its commit, or None (its directory is removed then)."""
    inputs = fold.inputs
    after = fold.absorbed[0].after if fold.absorbed else inputs.covers_upto
    upto = inputs.events[-1][0]
    with _compaction_failure_recorded(fold.run_id), transaction.atomic():
        lake_commit_lock()
        if _rewrite_under_way() or _history_inputs_changed(inputs):
            # A purge rewrote what this generation was folded from (R15), or another compaction
            # got there first: committing it would bring purged messages back, or fold events
            # twice. A purge under way would fail at its swap if this committed now. The next
            # compaction folds the lake as it is then.
            shutil.rmtree(lake().path(fold.path), ignore_errors=True)
            log.info("history generation %s: the lake changed meanwhile; dropped", fold.path)
            _compaction_end(
                fold.run_id, status=CompactionRun.SKIPPED, note=LAKE_CHANGED, rows=fold.rows
            )
            return None
        commit = lake_commit_record(
            dataset="history",
            path=fold.path,
            row_count=fold.rows,
            idempotency_key=f"history:{after}-{upto}",
            covers_upto=upto,
            buckets=fold.buckets,
        )
        lake_commits_retire(ids=[g.id for g in fold.absorbed])
        _compaction_end(
            fold.run_id, status=CompactionRun.COMMITTED, rows=fold.rows, lake_commit=commit.id
        )
    log.info(
        "history generation %s: %s events commits and %s generations, %s rows in %s files, %.1f s",
        commit.id,
        len(inputs.events),
        len(fold.absorbed),
        fold.rows,
        fold.files,
        fold.seconds,
    )
    return commit


def _history_inputs_changed(inputs):
    """Is any history generation, or any events commit `inputs` read, not as it was read?"""
    generations = dict(
        LakeCommit.objects.filter(dataset="history", retired=False).values_list("id", "path")
    )
    if generations != {g.id: g.path for g in inputs.generations}:
        return True
    read = {i: p for i, p, _ in inputs.events}
    found = dict(
        LakeCommit.objects.filter(id__in=list(read), retired=False).values_list("id", "path")
    )
    return found != read
