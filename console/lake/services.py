"""Writes to the lake catalog. Callers hold the transaction: a commit row is recorded in the same
transaction as the bookkeeping that goes with it (ARCHITECTURE: lake commits)."""

import logging
import shutil
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from console.advisory_locks import xact_lock
from console.lake.models import Epoch, LakeCommit, LakeRewrite
from console.lake.selectors import lake_newest
from console.lake.signals import events_to_fold
from workers.lake.store import Lake

log = logging.getLogger(__name__)

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
    xact_lock(LAKE_COMMIT_LOCK, "the lake commit lock")


def lake_commit_record(
    *,
    dataset,
    path,
    row_count,
    idempotency_key,
    epoch=None,
    covers_upto=None,
    views_applied=False,
    buckets=None,
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
        buckets=buckets,
    )
    if dataset == "events" and not views_applied:
        # New events change what the console shows: its read models are refreshed once they
        # are visible (console.browse listens).
        events_to_fold.send(sender=LakeCommit, commit=commit)
    return commit


def lake_commits_retire(*, ids):
    """Compaction swapped these out; readers stop seeing them in the same transaction."""
    return LakeCommit.objects.filter(id__in=ids, retired=False).update(
        retired=True, retired_at=timezone.now()
    )


@contextmanager
def lake_rewrite_held(*, holder, seconds):
    """Keep the compactions off the lake while the caller rewrites it (console.retention's
    purge): none starts, and one that read the lake before commits nothing. The hold lapses
    after `seconds` if the caller dies holding it."""
    until = timezone.now() + timedelta(seconds=seconds)
    LakeRewrite.objects.update_or_create(holder=holder, defaults={"until": until})
    try:
        yield
    finally:
        LakeRewrite.objects.filter(holder=holder).delete()


def lake_rewrites_release(*, holders):
    """Let go of the holds of these holders now, rather than when each lapses: called in the
    transaction where a rewriter records that it is over (a purge killed between its commit and
    its own release kept the compactions off the lake until `until`)."""
    return LakeRewrite.objects.filter(holder__in=list(holders)).delete()[0]


def lake_rewrite_holders():
    """Who holds the lake now (lapsed holds included)."""
    return list(LakeRewrite.objects.values_list("holder", flat=True))


def lake_history_dirs_delete(*, now=None):
    """Delete the directories of the history generations a merge retired PURGE_GRACE_SECONDS ago
    or more, and forget them: nobody reads them any more. Returns how many it deleted."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.PURGE_GRACE_SECONDS)
    store = lake()
    done = LakeCommit.objects.filter(dataset="history", retired=True, retired_at__lte=cutoff)
    deleted = 0
    for commit_id, path in list(done.values_list("id", "path")):
        shutil.rmtree(store.path(path), ignore_errors=True)
        LakeCommit.objects.filter(id=commit_id).delete()
        deleted += 1
    return deleted


class LakeChanged(Exception):
    """The commits a rewrite read are not as it read them any more: nothing was swapped."""


def lake_commits_rewrite(
    *,
    rewritten,
    emptied,
    snapshot_read,
    snapshot_new,
    idempotency_key,
    history_read=(),
    open_read=None,
    open_new=None,
):
    """Swap in a rewrite of committed directories (a purge's, console.retention). Must run inside
    the caller's transaction, which it holds the lake commit lock for.

    - `rewritten`: {commit id: (path read, new path, rows)}. Each commit keeps its id and shows
      its new directory: commits stay visible in id order, and "the commits after N" (the
      refresh's cursor, a decision's plan) keeps meaning what it meant.
    - `emptied`: {commit id: path read}: commits left with no rows, retired.
    - `snapshot_read`: (id, path) of the newest state snapshot the rewrite read, or None;
      `snapshot_new`: (path, rows) of its rewrite, committed with the same coverage, or None.
    - `history_read`: the ids of every history generation the rewrite read (those that held
      none of the rewritten rows included).
    - `open_read`, `open_new`: the same as `snapshot_read`, `snapshot_new` for the newest open
      snapshot (lake_due_inputs); `open_new` None when it held none of the rewritten rows.

    Raises LakeChanged when any of them is not as read (retired or rewritten by someone else
    meanwhile, or a newer snapshot or history generation built from the old data). Returns the
    directories no reader is shown any more."""
    lake_commit_lock()
    generations = set(
        LakeCommit.objects.filter(dataset="history", retired=False).values_list("id", flat=True)
    )
    if generations != set(history_read):
        # A compaction folded or merged the old data into a generation this rewrite never saw.
        raise LakeChanged("a history generation was committed or merged since the lake was read")
    expected = {i: old for i, (old, _, _) in rewritten.items()} | dict(emptied)
    found = dict(
        LakeCommit.objects.filter(id__in=list(expected), retired=False).values_list("id", "path")
    )
    if found != expected:
        changed = sorted(i for i in expected if found.get(i) != expected[i])
        raise LakeChanged(f"commits {changed[:10]} changed since they were read")
    for dataset, read in (("state", snapshot_read), ("open", open_read)):
        newest = lake_newest(dataset)
        if newest != (read[0] if read else None):
            raise LakeChanged(f"{dataset} snapshot {newest} was committed since the lake was read")
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
    if open_new is not None:
        lake_commit_record(
            dataset="open",
            path=open_new[0],
            row_count=open_new[1],
            idempotency_key=f"open:{idempotency_key}",
            covers_upto=LakeCommit.objects.get(id=open_read[0]).covers_upto,
        )
        lake_commits_retire(ids=[open_read[0]])
        gone.append(open_read[1])
    return gone
