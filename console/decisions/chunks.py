"""One chunk of an executing request: loaded, decided by the job once, committed.

`chunk_prepare` loads what the chunk needs from the console (its frozen ids, the index's rows of
them, the lake's directories to read), hands it to workers.jobs.decisions.chunk_run in one
`ChunkParams`, and reads where its decided messages count in the index. `chunk_commit` writes
the result in the caller's transaction (which holds the lease): the lake commits with the key
"decision:<request>:<chunk>", the chunk row, the counters, the poison list and the read models.
"""

import dataclasses
import json
from datetime import UTC, datetime

import pyarrow.compute as pc
import pyarrow.dataset as pads
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F

from console.decisions.lease import LeaseLost
from console.decisions.models import ActionChunk
from console.decisions.models import ActionRequest as R
from console.delivery.poison import poison_reprocessed
from console.lake.models import LakeCommit
from console.lake.selectors import lake_paths, lake_state_inputs
from console.lake.services import lake, lake_commit_lock, lake_commit_record
from console.readmodels.deltas import (
    decided_staged,
    index_bodies_move,
    index_members,
    index_placement,
    read_models_apply,
)
from workers.jobs.decisions.run import ChunkParams, ChunkResult, chunk_run

# A chunk keeps this many of the members a bulk edit could not edit, with why; it counts them
# all (ActionChunk.failures, ActionRequest.failed).
FAILURES_KEPT = 100


def chunk_ids_path(plan_path):
    """The frozen ids numbered with their chunk, beside the plan."""
    return f"{plan_path.rsplit('/', 1)[0]}/chunk-ids.parquet"


def request_params(request):
    """What each chunk of `request` decides alike: the request's part of its ChunkParams."""
    return ChunkParams(
        request_id=request.id,
        action=request.action,
        epoch=request.epoch,
        actor=request.requester.get_username(),
        approver=request.decided_by.get_username() if request.decided_by_id else None,
        comment=request.comment,
        lake_root=str(lake().root),
        plan_path=request.plan_path,
        plan_from_index=request.plan_from_index,
        target_queue=request.target_queue,
        error_code=request.error_code,
        error_description=request.error_description,
        edited_body=bytes(request.edited_body) if request.edited_body is not None else None,
        edited_headers=request.edited_headers,
        patch=request.patch,
        max_body_bytes=settings.MAX_BODY_BYTES,
        redrive_target=(
            json.dumps(request.redrive_target, sort_keys=True) if request.redrive_target else None
        ),
    )


@dataclasses.dataclass(frozen=True)
class Prepared:
    """One chunk decided and written, not yet committed."""

    index: int
    result: ChunkResult
    seen_upto: int  # the newest lake commit when the chunk re-read what changed since the plan
    placement: object  # where its decided messages count in the index (index_placement)


def chunk_prepare_in_thread(request, params, index):
    try:
        return chunk_prepare(request, params, index)
    finally:
        connection.close()  # the thread's own connection


def chunk_prepare(request, params, index):
    """Load the chunk, call the job once, and read where its decided messages count."""
    ids = pads.dataset(lake().path(chunk_ids_path(request.plan_path)), format="parquet").to_table(
        columns=["message_id"], filter=pc.field("chunk") == index
    )
    index_rows = placement = None
    if request.plan_from_index:
        index_rows, placement = index_members(ids.column("message_id").to_pylist())
    seen_upto = LakeCommit.objects.order_by("-id").values_list("id", flat=True).first() or 0
    reprocess = request.action == R.REPROCESS or request.edited_body is not None
    result = chunk_run(
        dataclasses.replace(
            params,
            chunk=index,
            at=datetime.now(UTC),
            chunk_ids=ids,
            index_rows=index_rows,
            newer_paths=tuple(_newer_paths(request)),
            ledger_paths=tuple(_ledger_paths()) if request.plan_from_index else (),
            message_paths=tuple(lake_paths(dataset="messages")) if reprocess else (),
        )
    )
    # Read here, in the thread that prepares a chunk while the previous one commits: the
    # commit then touches the index's narrow rows only.
    if placement is None:
        placement = index_placement(result.outcome.decided.column("message_id").to_pylist())
    return Prepared(index, result, seen_upto, placement)


def _others_event_commits(request):
    """Event commits others made (not this request's own chunks)."""
    return LakeCommit.objects.filter(dataset="events").exclude(
        idempotency_key__startswith=f"decision:{request.id}:"
    )


def _newer_paths(request):
    """Event commits others made after the plan was made, which the chunk must see."""
    others = _others_event_commits(request).filter(retired=False)
    if request.plan_upto is not None:
        others = others.filter(id__gt=request.plan_upto)
    return others.order_by("id").values_list("path", flat=True)


def _ledger_paths():
    inputs = lake_state_inputs()
    return [*inputs.snapshot_paths, *inputs.event_paths]


def _versions_commit(written, key):
    """Record in the lake the new message versions a chunk wrote (its edits, or its messages
    sent to another queue)."""
    lake_commit_record(
        dataset="messages",
        path=written.directory,
        row_count=written.versions.num_rows,
        idempotency_key=key,
    )


def chunk_commit(request, params, prepared):
    """Commit a prepared chunk, in the caller's transaction (which checked the lease). Returns
    the chunk's row (an existing one when it was committed before)."""
    # Nobody commits to the lake from here to the end of this transaction: if someone did
    # between the chunk's reading and now, it is decided again, under the lock.
    lake_commit_lock()
    existing = ActionChunk.objects.filter(request=request, index=prepared.index).first()
    if existing is not None:
        return existing
    if _others_event_commits(request).filter(id__gt=prepared.seen_upto).exists():
        prepared = chunk_prepare(request, params, prepared.index)
    result, index = prepared.result, prepared.index
    outcome = result.outcome
    key = f"decision:{request.id}:{index}"
    events_commit = None
    if result.events_dir:
        if result.edits is not None:
            # R13: the edited versions; the lineage finds them by this key (console.browse).
            _versions_commit(result.edits, f"{key}:edit")
        events_commit = lake_commit_record(
            dataset="events",
            path=result.events_dir,
            row_count=outcome.events.num_rows,
            idempotency_key=key,
            epoch=request.epoch,
            views_applied=True,
        ).id
    if result.retarget is not None:
        _versions_commit(result.retarget, f"{key}:target")
    if result.notifications_dir:
        lake_commit_record(
            dataset="notifications",
            path=result.notifications_dir,
            row_count=outcome.notifications.num_rows,
            idempotency_key=key,
            epoch=request.epoch,
        )
    try:
        with transaction.atomic():
            chunk = ActionChunk.objects.create(
                request=request,
                index=index,
                done=outcome.done,
                skipped=outcome.skipped,
                failed=outcome.failed,
                siblings_ended=outcome.siblings_ended,
                events_commit=events_commit,
                failures=result.failures.slice(0, FAILURES_KEPT).to_pylist(),
            )
    except IntegrityError:
        # Another worker committed this chunk first; the lock makes this all but impossible.
        raise LeaseLost from None
    R.objects.filter(id=request.id).update(
        done=F("done") + outcome.done,
        skipped=F("skipped") + outcome.skipped,
        failed=F("failed") + outcome.failed,
        siblings_ended=F("siblings_ended") + outcome.siblings_ended,
        notifications=F("notifications") + outcome.notifications.num_rows,
        chunks_done=F("chunks_done") + 1,
    )
    decided = outcome.decided
    with decided_staged(decided, prepared.placement) as staged:
        if request.action == R.REPROCESS:
            # R9, R13: reprocessing takes the message off the poison list, id and body.
            poison_reprocessed(
                staged=staged,
                request_id=request.id,
                edited_bodies=(
                    result.edits.versions.column("body_sha256").to_pylist()
                    if result.edits is not None
                    else ()
                ),
            )
        read_models_apply(
            decided=decided,
            staged=staged,
            at=outcome.decided_at,
            reset=request.action == R.REPROCESS,
            target_queue=request.target_queue,
        )
    # The index follows the messages to their new versions (the browser reads the body there).
    for written in (result.edits, result.retarget):
        if written is not None:
            index_bodies_move(written.versions, written.directory)
    return chunk
