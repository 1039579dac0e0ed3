"""Writes to the lake catalog. Callers hold the transaction: a commit row is recorded in the same
transaction as the bookkeeping that goes with it (ARCHITECTURE: lake commits)."""

import shutil

from django.conf import settings
from django.db import transaction

from console.lake.models import Epoch, LakeCommit
from console.lake.signals import events_to_fold
from workers.lake.store import Lake

LAKE_COMMIT_LOCK = 0x4C414B45  # an arbitrary, fixed advisory-lock key for lake commits


def lake():
    return Lake(settings.LAKE_URI)


def epoch_allocate(*, purpose):
    return Epoch.objects.create(purpose=purpose[:200]).id


def lake_commit_lock():
    """Hold the lake commit lock until the caller's transaction ends.

    Commits must become visible in id order: a snapshot covers "every events commit up to N",
    which would silently skip a lower id that committed later. On PostgreSQL an advisory lock
    serializes them; SQLite serializes writers already."""
    conn = transaction.get_connection()
    if not conn.in_atomic_block:
        raise RuntimeError("the lake commit lock is held inside the caller's transaction")
    if conn.vendor == "postgresql":
        with conn.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LAKE_COMMIT_LOCK])


def lake_commit_record(
    *,
    dataset,
    path,
    row_count,
    idempotency_key,
    epoch=None,
    covers_upto=None,
    views_applied=False,
):
    """Make one written directory visible. Must run inside the caller's transaction.
    `views_applied`: the caller brings the read models up to date itself in this transaction,
    so no refresh is asked for."""
    lake_commit_lock()
    commit = LakeCommit.objects.create(
        dataset=dataset,
        path=path,
        row_count=row_count,
        idempotency_key=idempotency_key,
        epoch=epoch,
        covers_upto=covers_upto,
        views_applied=views_applied,
    )
    if dataset == "events" and not views_applied:
        # New events change what the console shows: its read models are refreshed once they
        # are visible (console.browse listens).
        events_to_fold.send(sender=LakeCommit, commit=commit)
    return commit


def lake_commits_retire(*, ids):
    """Compaction swapped these out; readers stop seeing them in the same transaction."""
    return LakeCommit.objects.filter(id__in=ids, retired=False).update(retired=True)


def lake_state_compact_if_due(*, force=False, spark=None):
    """Fold the newest snapshot and the event commits after it into a new state snapshot, and
    swap it in with one transaction. Returns the new snapshot's commit, or None."""
    from console.lake.selectors import lake_state_inputs
    from console.spark import spark_from_settings
    from workers.jobs.state import extract_state

    inputs = lake_state_inputs()
    if not inputs.event_paths:
        return None
    if not force and len(inputs.event_paths) < settings.COMPACT_AFTER_COMMITS:
        return None
    store = lake()
    session = spark or spark_from_settings()
    path = store.new_dir("state", "snapshot")
    state = extract_state(
        session, store.paths(inputs.snapshot_paths), store.paths(inputs.event_paths)
    )
    state.write.parquet(store.path(path))
    rows = session.read.parquet(store.path(path)).count()
    with transaction.atomic():
        lake_commit_lock()
        if _state_inputs_changed(inputs):
            # A purge rewrote what this snapshot was folded from (R15): committing it would bring
            # purged messages back. The next compaction folds the lake as it is now.
            shutil.rmtree(store.path(path), ignore_errors=True)
            return None
        commit = lake_commit_record(
            dataset="state",
            path=path,
            row_count=rows,
            idempotency_key=f"state:upto:{inputs.last_event_commit}",
            covers_upto=inputs.last_event_commit,
        )
        if inputs.snapshot_id is not None:
            lake_commits_retire(ids=[inputs.snapshot_id])
    return commit


def _state_inputs_changed(inputs):
    """Is the newest snapshot, or any events commit after it, not what `inputs` read?"""
    newest = (
        LakeCommit.objects.filter(dataset="state", retired=False)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    if newest != inputs.snapshot_id:
        return True
    unchanged = LakeCommit.objects.filter(
        dataset="events", retired=False, path__in=inputs.event_paths
    ).count()
    return unchanged != len(inputs.event_paths)


class LakeChanged(Exception):
    """The commits a rewrite read are not as it read them any more: nothing was swapped."""


def lake_commits_rewrite(*, rewritten, emptied, snapshot_read, snapshot_new, idempotency_key):
    """Swap in a rewrite of committed directories (a purge's, console.retention). Must run inside
    the caller's transaction, which it holds the lake commit lock for.

    - `rewritten`: {commit id: (path read, new path, rows)}. Each commit keeps its id and shows
      its new directory: commits stay visible in id order, and "the commits after N" (the
      refresh's cursor, a decision's plan) keeps meaning what it meant.
    - `emptied`: {commit id: path read}: commits left with no rows, retired.
    - `snapshot_read`: (id, path) of the newest state snapshot the rewrite read, or None;
      `snapshot_new`: (path, rows) of its rewrite, committed with the same coverage, or None.

    Raises LakeChanged when any of them is not as read (retired or rewritten by someone else
    meanwhile, or a newer snapshot built from the old data). Returns the directories no reader is
    shown any more."""
    lake_commit_lock()
    expected = {i: old for i, (old, _, _) in rewritten.items()} | dict(emptied)
    found = dict(
        LakeCommit.objects.filter(id__in=list(expected), retired=False).values_list("id", "path")
    )
    if found != expected:
        changed = sorted(i for i in expected if found.get(i) != expected[i])
        raise LakeChanged(f"commits {changed[:10]} changed since they were read")
    newest = (
        LakeCommit.objects.filter(dataset="state", retired=False)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    if newest != (snapshot_read[0] if snapshot_read else None):
        raise LakeChanged(f"a state snapshot ({newest}) was committed since the lake was read")
    LakeCommit.objects.bulk_update(
        [LakeCommit(id=i, path=new, row_count=rows) for i, (_, new, rows) in rewritten.items()],
        ["path", "row_count"],
        batch_size=500,
    )
    lake_commits_retire(ids=list(emptied))
    gone = [old for old, _, _ in rewritten.values()] + list(emptied.values())
    if snapshot_new is not None:
        covers = LakeCommit.objects.get(id=snapshot_read[0]).covers_upto
        lake_commit_record(
            dataset="state",
            path=snapshot_new[0],
            row_count=snapshot_new[1],
            idempotency_key=idempotency_key,
            covers_upto=covers,
        )
        lake_commits_retire(ids=[snapshot_read[0]])
        gone.append(snapshot_read[1])
    return gone
