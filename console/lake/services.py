"""Writes to the lake catalog. Callers hold the transaction: a commit row is recorded in the same
transaction as the bookkeeping that goes with it (ARCHITECTURE: lake commits)."""

from django.conf import settings
from django.db import transaction

from console.lake.models import Epoch, LakeCommit
from workers.lake.store import Lake


def lake():
    return Lake(settings.LAKE_URI)


def epoch_allocate(*, purpose):
    return Epoch.objects.create(purpose=purpose[:200]).id


def lake_commit_record(*, dataset, path, row_count, idempotency_key, epoch=None, covers_upto=None):
    """Make one written directory visible. Must run inside the caller's transaction."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("a lake commit must be recorded inside the caller's transaction")
    return LakeCommit.objects.create(
        dataset=dataset,
        path=path,
        row_count=row_count,
        idempotency_key=idempotency_key,
        epoch=epoch,
        covers_upto=covers_upto,
    )


def lake_commits_retire(*, ids):
    """Compaction swapped these out; readers stop seeing them in the same transaction."""
    return LakeCommit.objects.filter(id__in=ids, retired=False).update(retired=True)
