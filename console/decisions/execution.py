"""Carrying out an approved action request (R13), chunk by chunk, exactly once.

The request row is the execution's lease (a heartbeat, and the worker that holds it). It runs:
1. prepare, once: check the frozen id file against its approved hash, number the ids with their
   chunk, and plan. A reprocess plans from the message index, chunk by chunk: each chunk reads
   its members' rows as of the index's last refresh, the events committed since on top, and
   the ledger for any member the index does not hold. A fail and an end with error plan from
   the lake (workers.jobs.decisions.plan_write: every id's current state from the whole lake,
   with Spark, or pyarrow for a small set);
2. each chunk (console.decisions.chunks): loaded, handed to the job once
   (workers.jobs.decisions.chunk_run), and committed in its own DB transaction: the lease is
   checked, the chunk decided again if others committed events since it read the lake, the
   decision events committed with the key "decision:<request>:<chunk>", the chunk row and the
   counters recorded, the poison list and the read models updated. (request, chunk) is unique,
   so a chunk is decided once however often a worker dies or a task arrives twice;
3. between chunks: cancel (stop before the next chunk), the rate limit, and the steps of a
   progressive redrive (a canary is its one step): each step is one chunk; once it is
   committed, and if any chunk comes after it, the request waits for its messages' delivery
   outcome and the decisions sweeper resumes it (the next step, or the rest) or stops it.
A worker that dies leaves RUNNING with a stale heartbeat; the sweeper re-enqueues it and the next
worker takes it over and goes on from the first chunk not committed, or first waits for the
outcome of a step it committed but did not hand over to the sweeper. The lease's operations
(claim, heartbeat, hold, finish, hand back) are console.decisions.lease's.
"""

import hashlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from django.db import transaction

from console.audit.services import audit_record
from console.decisions.chunks import (
    chunk_commit,
    chunk_ids_path,
    chunk_prepare_in_thread,
    request_params,
)
from console.decisions.lease import (
    LeaseLost,
    action_request_claim_for_execution,
    lease_finish,
    lease_hand_back,
    lease_heartbeat,
    lease_hold,
    lease_renew,
    worker_token,
)
from console.decisions.models import ActionChunk
from console.decisions.models import ActionRequest as R
from console.decisions.scope import frozen_ids, ids_hash
from console.delivery.tasks import delivery_run_enqueue
from console.lake.selectors import lake_paths, lake_state_inputs
from console.lake.services import epoch_allocate, lake
from console.queues.models import Queue
from console.readmodels.selectors import read_models_folded_upto
from workers.jobs.decisions.chunk import request_run_id
from workers.jobs.decisions.frozen import frozen_number
from workers.jobs.decisions.plan import PlanParams, plan_write
from workers.jobs.decisions.steps import STEP_PASSED, STEP_PENDING
from workers.logcontext import log_context

__all__ = ["LeaseLost", "action_request_claim_for_execution", "action_request_execute"]

log = logging.getLogger(__name__)

# A chunk is one transaction under the lake commit lock: larger chunks spread its fixed costs
# (counts, poison list, lake commit, chunk row: about 0.1 s on PostgreSQL) over more messages,
# smaller ones hold the lock for less. At 25,000 a chunk commits in about a second on PostgreSQL
# (0.7 s on SQLite), with the poison list and the index of every message it decides.
MAX_CHUNK = 25_000
# A set this small is planned with pyarrow on the worker: a Spark job costs seconds of overhead,
# and one message sent back to its queue should be back in seconds.
SMALL_PLAN = 10_000


class FrozenSetChanged(Exception):
    """The frozen id file no longer hashes to what was approved."""


def action_request_execute(*, request_id, spark=None, sleep=time.sleep, clock=time.monotonic):
    """Run (or go on with) an approved request. Returns the request as it ended up, or None when
    this caller did not get it (not approved, expired, or held by a live worker)."""
    with log_context(action_request_id=request_id, run_id=request_run_id(request_id)):
        return _execute(request_id, spark, sleep, clock)


def _execute(request_id, spark, sleep, clock):
    worker = worker_token()
    request = action_request_claim_for_execution(request_id=request_id, worker=worker)
    if request is None:
        return None
    heartbeat = lease_heartbeat(request, worker)
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


def _audit(request, action, details):
    """An execution's step in the audit trail, by the system."""
    audit_record(
        actor="system", action=action, target_type="request", target_id=request.id, details=details
    )


# --- Prepare ------------------------------------------------------------------------------------


def _prepare(request, worker, spark):
    if request.plan_path:
        _audit(request, "execution.resumed", {"worker": worker, "chunks_done": request.chunks_done})
        return request
    if request.target_queue and not Queue.objects.filter(name=request.target_queue).exists():
        raise ValueError(f"the queue {request.target_queue!r} no longer exists")
    chunk_size = min(MAX_CHUNK, request.rate_limit or MAX_CHUNK)
    store = lake()
    plan_dir = store.new_dir("plans", f"request{request.id}")
    (store.root / plan_dir).mkdir(parents=True)
    chunk_ids = store.path(chunk_ids_path(f"{plan_dir}/plan"))
    digest = hashlib.sha256()

    def hashed(batches):
        for ids in batches:
            ids_hash(digest, ids)
            yield ids

    count, chunks = frozen_number(
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
        params = PlanParams(
            action=request.action,
            chunk_ids_path=chunk_ids,
            snapshot_paths=store.paths(inputs.snapshot_paths),
            event_paths=store.paths(inputs.event_paths),
            message_paths=store.paths(lake_paths(dataset="messages")),
            out_dir=store.path(f"{plan_dir}/plan"),
            row_group_rows=MAX_CHUNK,
        )
        if count <= SMALL_PLAN and request.action != R.END:
            plan = "pyarrow"
            plan_write(params)
        else:
            from console.spark import spark_from_settings

            plan = "spark"
            plan_write(params, spark or spark_from_settings())
    with transaction.atomic():
        lease_hold(
            request,
            worker,
            epoch=epoch,
            plan_path=f"{plan_dir}/plan",
            plan_upto=plan_upto,
            plan_from_index=plan == "index",
            chunk_size=chunk_size,
            chunks_total=chunks,
        )
        _audit(
            request,
            "execution.started",
            {
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


# --- Chunks ---------------------------------------------------------------------------------------


def _chunks_run(request, worker, sleep, clock):
    params = request_params(request)
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
        upcoming = ahead.submit(chunk_prepare_in_thread, request, params, todo[0]) if todo else None
        for position, index in enumerate(todo):
            prepared = upcoming.result()
            step_chunk = index < len(request.steps)
            following = todo[position + 1] if position + 1 < len(todo) else None
            upcoming = None
            if following is not None and not step_chunk:
                upcoming = ahead.submit(chunk_prepare_in_thread, request, params, following)
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
            with transaction.atomic():
                lease_renew(request, worker)
                chunk = chunk_commit(request, params, prepared)
            paced += chunk.done
            if step_chunk and chunk.done and following is not None:
                _step_begin(request, worker, chunk)
                return
            if step_chunk:
                _step_record(request, worker, chunk, verdict=STEP_UNWATCHED)
    _stop(request, worker, status=R.DONE)


def _cancel_requested(request):
    return R.objects.filter(id=request.id, cancel_requested=True).exists()


# --- Ending ---------------------------------------------------------------------------------------


def _stop(request, worker, *, status, error=""):
    """Leave RUNNING for good (done, cancelled or failed), with the counts in the audit trail."""
    with transaction.atomic():
        if not lease_finish(request, worker, status=status, error=error):
            return
        request.refresh_from_db()
        _audit(
            request,
            {
                R.DONE: "execution.finished",
                R.CANCELLED: "execution.cancelled",
                R.FAILED: "execution.failed",
            }[status],
            {**_counts(request), **({"error": error[:1000]} if error else {})},
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
    return not (last < len(results) and results[last].get("verdict") == STEP_PASSED)


def _step_results_with(request, index, result):
    results = list(request.step_results)
    results.extend({} for _ in range(index + 1 - len(results)))
    results[index] = result
    return results


def _step_entry(chunk, verdict):
    """A step as it is committed: watched (every message pending), or not (no outcome read)."""
    entry = {"step": chunk.index + 1, "size": chunk.done, "verdict": verdict}
    if verdict == STEP_PENDING:
        entry |= {"delivered": 0, "refailed": 0, "pending": chunk.done, "rate": 0.0, "reasons": []}
    return entry


def _step_record(request, worker, chunk, *, verdict):
    """Note a committed step that is not watched (STEP_UNWATCHED), for the request page."""
    request.refresh_from_db(fields=["step_results"])
    results = _step_results_with(request, chunk.index, _step_entry(chunk, verdict))
    lease_hold(request, worker, step_results=results)
    request.step_results = results


def _step_begin(request, worker, chunk):
    """The step's messages are back in their queues: hand the worker back (a delivery run
    needs it) and let the decisions sweeper watch their outcome."""
    with transaction.atomic():
        request.refresh_from_db(fields=["step_results"])
        results = _step_results_with(request, chunk.index, _step_entry(chunk, STEP_PENDING))
        lease_hand_back(
            request,
            worker,
            status=R.CANARY,
            canary_commit=chunk.events_commit,
            step_results=results,
        )
        _audit(
            request,
            "execution.step_started",
            {
                "step": chunk.index + 1,
                "steps": len(request.steps),
                "messages": chunk.done,
                "refailure_threshold": request.refailure_threshold,
            },
        )
        transaction.on_commit(delivery_run_enqueue, robust=True)
