"""Carrying out an approved action request (R13), chunk by chunk, exactly once.

The request row is the execution's lease (a heartbeat, and the worker that holds it). It runs:
1. prepare, once: check the frozen id file against its approved hash, number the ids with their
   chunk, and plan. A reprocess plans from the message index, chunk by chunk: each chunk reads
   its members' rows as of the index's last refresh, the events committed since on top, and
   the ledger for any member the index does not hold. A fail and an end with error plan from
   the lake (workers.jobs.decisions: every id's current state from the whole lake, with Spark,
   or pyarrow for a small set);
2. each chunk in its own DB transaction: the lease is checked, the chunk's messages that changed
   since the plan (events others committed) are re-read, the decision events are written and
   committed with the key "decision:<request>:<chunk>", the chunk row and the counters recorded,
   the poison list and the read models updated. (request, chunk) is unique, so a chunk is
   decided once however often a worker dies or a task arrives twice;
3. between chunks: cancel (stop before the next chunk), the rate limit, and the steps of a
   progressive redrive (a canary is its one step): each step is one chunk; once it is
   committed, and if any chunk comes after it, the request waits for its messages' delivery
   outcome and the decisions sweeper resumes it (the next step, or the rest) or stops it.
A worker that dies leaves RUNNING with a stale heartbeat; the sweeper re-enqueues it and the next
worker takes it over and goes on from the first chunk not committed, or first waits for the
outcome of a step it committed but did not hand over to the sweeper.
"""

import dataclasses
import hashlib
import json
import logging
import os
import socket
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from console.audit.services import audit_record
from console.decisions.models import ActionChunk
from console.decisions.models import ActionRequest as R
from console.decisions.scope import frozen_ids, ids_hash
from console.delivery.poison import poison_reprocessed
from console.delivery.tasks import delivery_run_enqueue
from console.heartbeat import Heartbeat
from console.lake.models import LakeCommit
from console.lake.selectors import lake_paths, lake_state_inputs
from console.lake.services import epoch_allocate, lake, lake_commit_lock, lake_commit_record
from console.queues.models import Queue
from console.readmodels.deltas import (
    decided_staged,
    index_members,
    index_placement,
    read_models_apply,
)
from console.readmodels.models import MessageIndex
from console.readmodels.selectors import read_models_folded_upto
from workers.jobs import decisions as D
from workers.lake.schema import MESSAGE_SCHEMA
from workers.lake.store import conform, messages_rows_in
from workers.logcontext import log_context

log = logging.getLogger(__name__)

# A chunk is one transaction under the lake commit lock: larger chunks spread its fixed costs
# (counts, poison list, lake commit, chunk row: about 0.1 s on PostgreSQL) over more messages,
# smaller ones hold the lock for less. At 25,000 a chunk commits in about a second on PostgreSQL
# (0.7 s on SQLite), with the poison list and the index of every message it decides.
MAX_CHUNK = 25_000
# A set this small is planned with pyarrow on the worker: a Spark job costs seconds of overhead,
# and one message sent back to its queue should be back in seconds.
SMALL_PLAN = 10_000


class LeaseLost(Exception):
    """Another worker took the request over (this one was thought dead): stop, commit nothing."""


class FrozenSetChanged(Exception):
    """The frozen id file no longer hashes to what was approved."""


def _worker_token():
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def action_request_claim_for_execution(*, request_id, worker="", now=None):
    """Take a request into execution, once: an APPROVED one (an approval past its expiry never
    runs: the request is marked expired instead), or a RUNNING one whose worker's heartbeat
    stopped (it died; its committed chunks stay committed). Returns the request if this caller
    won it, None otherwise."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=3 * settings.HEARTBEAT_SECONDS)
    with transaction.atomic():
        expired = R.objects.filter(id=request_id, status=R.APPROVED, expires_at__lte=now).update(
            status=R.EXPIRED, finished_at=now
        )
        if expired:
            audit_record(
                actor="system",
                action="request.expired",
                target_type="request",
                target_id=request_id,
            )
            return None
        won = R.objects.filter(id=request_id, status=R.APPROVED, expires_at__gt=now).update(
            status=R.RUNNING, worker=worker, started_at=now, heartbeat_at=now
        )
        if not won:
            won = (
                R.objects.filter(id=request_id, status=R.RUNNING)
                .filter(Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=stale))
                .update(worker=worker, heartbeat_at=now)
            )
    return R.objects.get(id=request_id) if won == 1 else None


def action_request_execute(*, request_id, spark=None, sleep=time.sleep, clock=time.monotonic):
    """Run (or go on with) an approved request. Returns the request as it ended up, or None when
    this caller did not get it (not approved, expired, or held by a live worker)."""
    with log_context(action_request_id=request_id, run_id=D.request_run_id(request_id)):
        return _execute(request_id, spark, sleep, clock)


def _execute(request_id, spark, sleep, clock):
    worker = _worker_token()
    request = action_request_claim_for_execution(request_id=request_id, worker=worker)
    if request is None:
        return None
    heartbeat = Heartbeat(R, request.id, settings.HEARTBEAT_SECONDS, owner=worker)
    heartbeat.start()
    try:
        request = _prepare(request, worker, spark)
        _chunks_run(request, worker, sleep, clock)
    except LeaseLost:
        log.warning("request %s: another worker took it over; this one stops", request.id)
    except Exception as exc:
        log.exception("request %s failed", request.id)
        _stop(request, worker, status=R.FAILED, error=f"{exc.__class__.__name__}: {exc}")
    finally:
        heartbeat.stop()
    request.refresh_from_db()
    return request


# --- Prepare ------------------------------------------------------------------------------------


def _prepare(request, worker, spark):
    if request.plan_path:
        audit_record(
            actor="system",
            action="execution.resumed",
            target_type="request",
            target_id=request.id,
            details={"worker": worker, "chunks_done": request.chunks_done},
        )
        return request
    if request.target_queue and not Queue.objects.filter(name=request.target_queue).exists():
        raise ValueError(f"the queue {request.target_queue!r} no longer exists")
    chunk_size = min(MAX_CHUNK, request.rate_limit or MAX_CHUNK)
    store = lake()
    plan_dir = store.new_dir("plans", f"request{request.id}")
    (store.root / plan_dir).mkdir(parents=True)
    chunk_ids = store.path(_chunk_ids_path(f"{plan_dir}/plan"))
    digest = hashlib.sha256()

    def hashed(batches):
        for ids in batches:
            ids_hash(digest, ids)
            yield ids

    count = D.write_chunk_ids(
        hashed(frozen_ids(request.ids_path)),
        chunk_ids,
        chunk_size=chunk_size,
        steps=request.steps,
    )
    if digest.hexdigest() != request.ids_sha256 or count != request.count:
        raise FrozenSetChanged(
            "the frozen id file no longer matches the set that was approved "
            f"({count} ids, SHA-256 {digest.hexdigest()}); nothing was done"
        )
    # The epoch is allocated before the lake (or the index) is read, so that every commit the
    # plan sees is older than the decisions it leads to.
    epoch = epoch_allocate(purpose=f"request {request.id}")
    started = time.perf_counter()
    # A reprocess needs nothing of the whole lake: the index holds every quarantined message's
    # state as of its refresh, and each chunk reads its own (a fold of a million messages'
    # ledger cost 10 s of a 37 s reprocess on PostgreSQL). Never refreshed: nothing to read.
    plan_upto = read_models_folded_upto() if request.action == R.REPROCESS else None
    if plan_upto is not None:
        plan = "index"
    else:
        inputs = lake_state_inputs()
        plan_upto = inputs.last_event_commit
        params = D.PlanParams(
            action=request.action,
            chunk_ids_path=chunk_ids,
            snapshot_paths=store.paths(inputs.snapshot_paths),
            event_paths=store.paths(inputs.event_paths),
            message_paths=store.paths(lake_paths(dataset="messages")),
            out_dir=store.path(f"{plan_dir}/plan"),
        )
        if count <= SMALL_PLAN and request.action != R.END:
            plan = "pyarrow"
            _plan_small(params, [*inputs.snapshot_paths, *inputs.event_paths])
        else:
            from console.spark import spark_from_settings

            plan = "spark"
            D.run_plan(spark or spark_from_settings(), params)
    chunks = D.chunk_count(count, chunk_size=chunk_size, steps=request.steps)
    with transaction.atomic():
        won = R.objects.filter(id=request.id, status=R.RUNNING, worker=worker).update(
            epoch=epoch,
            plan_path=f"{plan_dir}/plan",
            plan_upto=plan_upto,
            plan_from_index=plan == "index",
            chunk_size=chunk_size,
            chunks_total=chunks,
        )
        if won != 1:
            raise LeaseLost
        audit_record(
            actor="system",
            action="execution.started",
            target_type="request",
            target_id=request.id,
            details={
                "count": count,
                "chunks": chunks,
                "chunk_size": chunk_size,
                "rate_limit": request.rate_limit,
                "steps": request.steps,
                "refailure_threshold": request.refailure_threshold if request.steps else None,
                "plan": plan,
                "plan_seconds": round(time.perf_counter() - started, 2),
                "worker": worker,
            },
        )
    request.refresh_from_db()
    return request


def _chunk_ids_path(plan_path):
    """The frozen ids numbered with their chunk, beside the plan."""
    return f"{plan_path.rsplit('/', 1)[0]}/chunk-ids.parquet"


def _plan_small(params, state_paths):
    """The plan of a small set with pyarrow: only the frozen ids' events are read (snapshot and
    commits, with a filter on the ids)."""
    ids = pq.read_table(params.chunk_ids_path)
    events = _ledger_read(ids.column("message_id"), state_paths)
    D.write_plan_arrow(D.plan_members_arrow(ids, events), params, row_group_rows=MAX_CHUNK)


# --- Chunks ---------------------------------------------------------------------------------------


def _decision(request):
    approver = request.decided_by.get_username() if request.decided_by_id else None
    return D.Decision(
        action=request.action,
        request_id=request.id,
        epoch=request.epoch,
        actor=request.requester.get_username(),
        reason=D.decision_reason(
            action=request.action,
            request_id=request.id,
            approver=approver,
            comment=request.comment,
        ),
        target_queue=request.target_queue,
        error_code=request.error_code,
        error_description=request.error_description,
    )


def _chunks_run(request, worker, sleep, clock):
    decision = _decision(request)
    committed = dict(ActionChunk.objects.filter(request=request).values_list("index", "done"))
    if _step_unwatched(request, committed):
        # The worker before this one died between committing a step and handing it over.
        _step_begin(request, worker, ActionChunk.objects.get(request=request, index=max(committed)))
        return
    todo = [index for index in range(request.chunks_total) if index not in committed]
    started, paced = clock(), 0
    # While one chunk commits (the database's work), the next is read, decided and written to
    # Parquet (pyarrow's) in a thread: a chunk costs the larger of the two, not their sum.
    # This thread waits on that one holding its own connection: a task needs two of the pool's
    # at once, hence DB_POOL_MAX at least twice the worker's concurrency (settings).
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"request{request.id}") as ahead:
        upcoming = (
            ahead.submit(_chunk_prepare_in_thread, request, todo[0], decision) if todo else None
        )
        for position, index in enumerate(todo):
            prepared = upcoming.result()
            step_chunk = index < len(request.steps)
            following = todo[position + 1] if position + 1 < len(todo) else None
            upcoming = None
            if following is not None and not step_chunk:
                upcoming = ahead.submit(_chunk_prepare_in_thread, request, following, decision)
            if _cancel_requested(request):
                _stop(request, worker, status=R.CANCELLED)
                return
            if request.rate_limit:
                # Never ahead of the limit: the next chunk waits until the last one's share of
                # time has passed (checking for a cancel meanwhile).
                while (wait := paced / request.rate_limit - (clock() - started)) > 0:
                    sleep(min(wait, 1.0))
                    if _cancel_requested(request):
                        _stop(request, worker, status=R.CANCELLED)
                        return
            chunk = _chunk_commit(request, worker, prepared)
            paced += chunk.done
            if step_chunk and chunk.done and following is not None:
                _step_begin(request, worker, chunk)
                return
            if step_chunk:
                _step_record(request, worker, chunk, verdict=STEP_UNWATCHED)
    _stop(request, worker, status=R.DONE)


def _cancel_requested(request):
    return R.objects.filter(id=request.id, cancel_requested=True).exists()


@dataclasses.dataclass
class _Prepared:
    """One chunk decided and written, not yet committed."""

    index: int
    decision: D.Decision
    members: pa.Table
    outcome: D.ChunkOutcome
    events_dir: str | None
    notifications_dir: str | None
    seen_upto: int  # the newest lake commit when the chunk re-read what changed since the plan
    placement: object  # where its decided messages count in the index (index_placement)
    retarget: "_Retarget | None" = None  # new versions that carry (or drop) a redrive target


def _chunk_prepare_in_thread(request, index, decision):
    try:
        return _chunk_prepare(request, index, decision)
    finally:
        connection.close()  # the thread's own connection


def _chunk_prepare(request, index, decision):
    store = lake()
    chunk_ids = D.read_chunk_ids(store.path(_chunk_ids_path(request.plan_path)), index)
    siblings = placement = None
    if request.plan_from_index:
        rows, placement = index_members(chunk_ids.column("message_id").to_pylist())
        members = D.members_from_index(rows)
    else:
        plan = store.path(request.plan_path)
        members = D.read_plan_chunk(f"{plan}/members", index, D.MEMBER_SCHEMA)
        if request.action == R.END:
            siblings = D.read_plan_chunk(f"{plan}/siblings", index, D.SIBLING_SCHEMA)
    members = D.with_missing(
        members if members is not None else D.MEMBER_SCHEMA.empty_table(), chunk_ids
    )
    seen_upto = LakeCommit.objects.order_by("-id").values_list("id", flat=True).first() or 0
    newer = _newer_events(request, members, siblings)
    members = D.with_newer(members, newer)
    if siblings is not None:
        siblings = D.with_newer(siblings, newer)
    if request.plan_from_index and len(unknown := D.unknown_ids(members)):
        members = D.with_newer(members, _ledger_read(unknown))
    if request.edited_body is not None and members.num_rows == 1:
        # The version after the one it has now (with what was committed since the plan).
        current = members.column("body_version")[0].as_py() or 1
        decision = dataclasses.replace(decision, body_version=current + 1)
    outcome = D.decide_chunk(members, siblings, decision, chunk=index, at=datetime.now(UTC))
    label = f"request{request.id}-chunk{index}"
    retarget = None
    if request.action == R.REPROCESS and decision.body_version is None and outcome.done:
        retarget = _retarget_prepare(request, outcome.events, label)
        if retarget is not None:
            outcome.events = D.with_body_versions(outcome.events, retarget.versions)
    events_dir = notifications_dir = None
    if outcome.events.num_rows:
        events_dir = store.write_arrow(outcome.events, store.new_dir("events", label))
    if outcome.notifications.num_rows:
        notifications_dir = store.write_arrow(
            outcome.notifications, store.new_dir("notifications", label)
        )
    # Read here, in the thread that prepares a chunk while the previous one commits: the
    # commit then touches the index's narrow rows only.
    if placement is None:
        placement = index_placement(outcome.decided.column("message_id").to_pylist())
    return _Prepared(
        index,
        decision,
        members,
        outcome,
        events_dir,
        notifications_dir,
        seen_upto,
        placement,
        retarget,
    )


@dataclasses.dataclass
class _Retarget:
    """The new versions of a reprocessed chunk's messages whose headers change: the request's
    redrive target added, or an earlier request's taken away."""

    directory: str
    versions: pa.Table  # message_id, version, body_size: of the new versions written


def _target_json(request):
    return json.dumps(request.redrive_target, sort_keys=True) if request.redrive_target else None


def _retarget_prepare(request, events, label):
    """Each reprocessed message must reach its sink with this request's redrive target, or with
    none: a sink reads the `redrive_target` of the version it delivers (the messages dataset,
    per version), which only a request writes (R18). So a chunk writes a new version of each
    message whose target must change (body, headers and all else kept), and its events point
    at it. Without a target only messages past their first version can carry an earlier
    request's target: a plain reprocess of messages as received reads nothing."""
    target = _target_json(request)
    current = events.select(["message_id", "body_version"])
    if target is None:
        versions = pc.fill_null(current.column("body_version"), 1)
        current = current.filter(pc.greater(versions, 1))
    if not current.num_rows:
        return None
    current = current.set_column(
        1, "version", pc.fill_null(current.column("body_version"), 1).cast(pa.int32())
    )
    ids = sorted(current.column("message_id").to_pylist())
    store = lake()
    found = [
        conform(rows, MESSAGE_SCHEMA)
        for _, rows in messages_rows_in(store.paths(lake_paths(dataset="messages")), ids)
    ]
    if not found:
        return None
    rows = pa.concat_tables(found).join(current, keys=["message_id", "version"], join_type="inner")
    rows = D.retargeted_messages(rows.select(MESSAGE_SCHEMA.names), target)
    if not rows.num_rows:
        return None
    directory = store.write_arrow(rows, store.new_dir("messages", f"{label}-target"))
    return _Retarget(directory, rows.select(["message_id", "version", "body_size"]))


def _changed_meanwhile(request, seen_upto):
    """Did anyone else commit events after the chunk re-read the lake?"""
    return (
        LakeCommit.objects.filter(dataset="events", id__gt=seen_upto)
        .exclude(idempotency_key__startswith=f"decision:{request.id}:")
        .exists()
    )


def _chunk_commit(request, worker, prepared):
    with transaction.atomic():
        if (
            R.objects.filter(id=request.id, status=R.RUNNING, worker=worker).update(
                heartbeat_at=timezone.now()
            )
            != 1
        ):
            raise LeaseLost
        # Nobody commits to the lake from here to the end of this transaction: if someone did
        # between the chunk's reading and now, it is decided again, under the lock.
        lake_commit_lock()
        existing = ActionChunk.objects.filter(request=request, index=prepared.index).first()
        if existing is not None:
            return existing
        if _changed_meanwhile(request, prepared.seen_upto):
            prepared = _chunk_prepare(request, prepared.index, _decision(request))
        outcome, decision, index = prepared.outcome, prepared.decision, prepared.index
        body = None
        events_commit = None
        if prepared.events_dir:
            if decision.body_version is not None and outcome.done:
                body = _edited_body_commit(request, prepared.members, decision, index)
            events_commit = lake_commit_record(
                dataset="events",
                path=prepared.events_dir,
                row_count=outcome.events.num_rows,
                idempotency_key=f"decision:{request.id}:{index}",
                epoch=request.epoch,
                views_applied=True,
            ).id
        if prepared.retarget is not None and outcome.done:
            lake_commit_record(
                dataset="messages",
                path=prepared.retarget.directory,
                row_count=prepared.retarget.versions.num_rows,
                idempotency_key=f"decision:{request.id}:{index}:target",
            )
        if prepared.notifications_dir:
            lake_commit_record(
                dataset="notifications",
                path=prepared.notifications_dir,
                row_count=outcome.notifications.num_rows,
                idempotency_key=f"decision:{request.id}:{index}",
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
                    edited_body_sha256=(
                        hashlib.sha256(bytes(request.edited_body)).hexdigest() if body else None
                    ),
                )
            read_models_apply(
                decided=decided,
                staged=staged,
                at=outcome.decided_at,
                reset=request.action == R.REPROCESS,
                target_queue=request.target_queue,
                body=body,
            )
        if prepared.retarget is not None:
            _retarget_index(prepared.retarget)
    return chunk


def _retarget_index(retarget):
    """The index follows the messages to their new versions (the browser reads the body there).
    A chunk's messages mostly share one version number: one UPDATE per number."""
    by_version = {}
    for message_id, version in zip(
        retarget.versions.column("message_id").to_pylist(),
        retarget.versions.column("version").to_pylist(),
        strict=True,
    ):
        by_version.setdefault(version, []).append(message_id)
    for version, ids in sorted(by_version.items()):
        for start in range(0, len(ids), 5000):
            MessageIndex.objects.filter(message_id__in=ids[start : start + 5000]).update(
                body_version=version, body_path=retarget.directory
            )


def _newer_events(request, members, siblings):
    """Events others committed after the plan was made, for this chunk's messages."""
    others = LakeCommit.objects.filter(dataset="events", retired=False).exclude(
        idempotency_key__startswith=f"decision:{request.id}:"
    )
    if request.plan_upto is not None:
        others = others.filter(id__gt=request.plan_upto)
    paths = list(others.order_by("id").values_list("path", flat=True))
    if not paths:
        return None
    ids = D.chunk_message_ids(members, siblings)
    return lake().read_arrow("events", paths, filter=pc.field("message_id").isin(ids))


def _ledger_read(message_ids, state_paths=None):
    """Every event of `message_ids` in the ledger (`state_paths`: the state snapshot and events
    commits, the newest when None). A small set's plan; and the members of a reprocess planned
    from the index that it does not hold: a message can leave the index after it was frozen
    (delivered without ever failing), and it is then skipped, as a plan from the lake would skip
    it, not failed as unknown. Rare, and a read of the whole ledger's ids column when it
    happens."""
    if state_paths is None:
        inputs = lake_state_inputs()
        state_paths = [*inputs.snapshot_paths, *inputs.event_paths]
    return lake().read_arrow("events", state_paths, filter=pc.field("message_id").isin(message_ids))


def _edited_body_commit(request, members, decision, index):
    """R13: the edited body is stored as a new version of the message; the original is kept."""
    store = lake()
    message_id = members.column("message_id")[0].as_py()
    original = store.read_arrow(
        "messages",
        lake_paths(dataset="messages"),
        filter=(pc.field("message_id") == message_id) & (pc.field("version") == 1),
    )
    if not original.num_rows:
        raise ValueError(f"message {message_id!r} has no stored body to edit")
    body = bytes(request.edited_body)
    directory = store.new_dir("messages", f"request{request.id}-chunk{index}-edit")
    # The edited version carries the request's redrive target too (it is made from the
    # original, which carries none).
    edited = D.edited_message(
        original, body, version=decision.body_version, redrive_target=_target_json(request)
    )
    store.write_arrow(edited, directory)
    lake_commit_record(
        dataset="messages",
        path=directory,
        row_count=1,
        idempotency_key=f"decision:{request.id}:edit",
    )
    return {
        "body_version": decision.body_version,
        "body_size": len(body),
        "body_path": directory,
    }


# --- Ending ---------------------------------------------------------------------------------------


def _stop(request, worker, *, status, error=""):
    """Leave RUNNING for good (done, cancelled or failed), with the counts in the audit trail."""
    with transaction.atomic():
        won = R.objects.filter(id=request.id, status=R.RUNNING, worker=worker).update(
            status=status, finished_at=timezone.now(), error=error[:5000]
        )
        if won != 1:
            return
        request.refresh_from_db()
        audit_record(
            actor="system",
            action={
                R.DONE: "execution.finished",
                R.CANCELLED: "execution.cancelled",
                R.FAILED: "execution.failed",
            }[status],
            target_type="request",
            target_id=request.id,
            details={**_counts(request), **({"error": error[:1000]} if error else {})},
        )
    log.info(
        "request %s %s: %s of %s done, %s skipped, %s failed",
        request.id,
        status,
        request.done,
        request.count,
        request.skipped,
        request.failed,
    )


def _counts(request):
    return {
        "count": request.count,
        "done": request.done,
        "skipped": request.skipped,
        "failed": request.failed,
        "siblings_ended": request.siblings_ended,
        "notifications": request.notifications,
        "chunks_done": request.chunks_done,
        "chunks_total": request.chunks_total,
    }


# --- Steps (a canary is a one-step progression) --------------------------------------------------

# A committed step with nothing after it, or that reprocessed nothing: there is nothing its
# outcome could hold back.
STEP_UNWATCHED = "reprocessed"


def _step_unwatched(request, committed):
    """Is the last committed chunk a step that reprocessed messages, has chunks after it, and has
    not passed? (`committed`: {index: done}.) Then its outcome must be watched before anything
    else goes: its worker died before handing it to the sweeper."""
    if not committed:
        return False
    last = max(committed)
    if last >= len(request.steps) or last + 1 >= request.chunks_total or not committed[last]:
        return False
    results = request.step_results
    return not (last < len(results) and results[last].get("verdict") == D.STEP_PASSED)


def _step_results_with(request, index, result):
    results = list(request.step_results)
    results.extend({} for _ in range(index + 1 - len(results)))
    results[index] = result
    return results


def _step_entry(chunk, verdict):
    """A step as it is committed: watched (every message pending), or not (no outcome read)."""
    entry = {"step": chunk.index + 1, "size": chunk.done, "verdict": verdict}
    if verdict == D.STEP_PENDING:
        entry |= {"delivered": 0, "refailed": 0, "pending": chunk.done, "rate": 0.0, "reasons": []}
    return entry


def _step_record(request, worker, chunk, *, verdict):
    """Note a committed step that is not watched (STEP_UNWATCHED), for the request page."""
    request.refresh_from_db(fields=["step_results"])
    results = _step_results_with(request, chunk.index, _step_entry(chunk, verdict))
    if (
        R.objects.filter(id=request.id, status=R.RUNNING, worker=worker).update(
            step_results=results
        )
        != 1
    ):
        raise LeaseLost
    request.step_results = results


def _step_begin(request, worker, chunk):
    """The step's messages are back in their queues: hand the worker back (a delivery run
    needs it) and let the decisions sweeper watch their outcome."""
    with transaction.atomic():
        request.refresh_from_db(fields=["step_results"])
        results = _step_results_with(request, chunk.index, _step_entry(chunk, D.STEP_PENDING))
        won = R.objects.filter(id=request.id, status=R.RUNNING, worker=worker).update(
            status=R.CANARY,
            canary_commit=chunk.events_commit,
            worker="",
            heartbeat_at=None,
            step_results=results,
        )
        if won != 1:
            raise LeaseLost
        audit_record(
            actor="system",
            action="execution.step_started",
            target_type="request",
            target_id=request.id,
            details={
                "step": chunk.index + 1,
                "steps": len(request.steps),
                "messages": chunk.done,
                "refailure_threshold": request.refailure_threshold,
            },
        )
        transaction.on_commit(delivery_run_enqueue, robust=True)
