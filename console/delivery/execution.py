"""Delivery runs: claim, run the Spark job, commit; and R7 recovery when a run dies.

A run holds a lease on what it claimed through its heartbeat row (console.leases). Whoever moves
the run out of RUNNING first, the run committing its outcome or the sweeper declaring it dead,
wins; the loser's output stays invisible (ARCHITECTURE: tasks may be lost, work may not).
"""

import itertools
import logging
import os
import shutil
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.dataset as pads
from django.conf import settings
from django.db import IntegrityError, close_old_connections, transaction
from django.utils import timezone

from console import leases
from console.audit.services import audit_record
from console.delivery.models import DeliveryLock, DeliveryRun
from console.delivery.poison import poison_feed_dir, poison_snapshot
from console.delivery.services import delivery_handovers_take, poison_add
from console.delivery.signals import queues_wanted
from console.lake.selectors import lake_committed, lake_due_inputs, lake_paths
from console.lake.services import epoch_allocate, lake, lake_commit_record
from console.queues.models import Queue
from workers.engine import rules
from workers.engine import states as S
from workers.lake.schema import CLAIM_SCHEMA, EVENT_SCHEMA
from workers.logcontext import log_context

log = logging.getLogger(__name__)


# Tries of _run_start against runs taking the same queues at the same time: each lost race means
# another run took a queue, so a few tries settle it.
RUN_START_ATTEMPTS = 3


def _run_start(queues):
    """A new run holding those of `queues` that no running run holds (R16: runs of different
    queues go on at the same time, never two on one queue). None if every one is held.

    A queue found held is marked wanted: its run may have read the lake before the messages this
    run was asked for (a wake handed the queue over just before that run took it), so it starts
    the next run as it lets go, rather than leaving them to beat's next tick."""
    epoch = epoch_allocate(purpose="delivery run")
    # Two runs that read the holders at the same time may both find a queue free: the second
    # one's lock then fails on its unique key, and its wanted mark is rolled back with it. It
    # tries again, to mark the winner's lock, or to take what the winner has let go of since.
    for _ in range(RUN_START_ATTEMPTS):
        try:
            return _run_take(queues, epoch)
        except IntegrityError:
            continue
    return None


def _run_take(queues, epoch):
    with transaction.atomic():
        # Marked before the holders are read, as delivery_dispatch does: a run that lets go in
        # between has seen the mark, or waited for this transaction and then saw it.
        DeliveryLock.objects.filter(queue__in=queues).update(wanted=True)
        held = set(DeliveryLock.objects.filter(queue__in=queues).values_list("queue", flat=True))
        free = [q for q in queues if q not in held]
        if not free:
            return None
        run = leases.start(DeliveryRun, epoch=epoch, queues=free)
        DeliveryLock.objects.bulk_create(
            [DeliveryLock(queue=q, run=run, since=run.started_at) for q in free]
        )
        return run


def _run_leave(run, *, status, **fields):
    """Take the run out of RUNNING and release its queues, in the caller's transaction.
    Returns False if it had left already (committed, or declared dead by the sweeper)."""
    if "finished_at" in fields:
        # Declared dead by the sweeper: its last heartbeat stays what it was.
        won = DeliveryRun.objects.filter(id=run.id, status=DeliveryRun.RUNNING).update(
            status=status, **fields
        )
    else:
        won = leases.finish(DeliveryRun, run.id, status=status, **fields)
    if won:
        locks = DeliveryLock.objects.filter(run_id=run.id)
        # Locked first: a dispatch marking one wanted either lands before this reads it, or
        # waits for the delete and then finds the queue free (and hands it over itself).
        held = list(locks.select_for_update().values_list("queue", "wanted"))
        wanted = [queue for queue, asked in held if asked]
        locks.delete()
        if wanted:
            queues_wanted.send(sender=DeliveryRun, queues=wanted)
    return bool(won)


def _policies():
    return {q.name: q.policy().as_dict() for q in Queue.objects.all()}


def _poison_lists(message_ids=None):
    """The list as the run's Spark job takes it: [(message_id, reason)], one (body_sha256,
    reason) per distinct hash (several entries may share a body: one row each would multiply the
    due messages in the job's join on the hash), and the change-log cursor it was read at, from
    which the executors follow the list's feed while the run goes on. With `message_ids`, only
    those messages' entries (poison_snapshot)."""
    snapshot = poison_snapshot(message_ids=message_ids)
    return snapshot.ids, [(sha, reason) for sha, reason, _ in snapshot.hashes], snapshot.cursor


def delivery_run(*, queues=None, now=None, fixed_clock=False, partitions=None, spark=None):
    """One delivery run over the due messages of the enabled queues (all, or those named).

    Returns the DeliveryRun, or None when another run is in progress. `now` and `fixed_clock`
    let tests and simulations choose the time the run happens at."""
    enabled = list(Queue.objects.filter(enabled=True).values_list("name", flat=True))
    if queues:
        unknown = set(queues) - set(Queue.objects.values_list("name", flat=True))
        if unknown:
            raise ValueError(f"unknown queue(s): {', '.join(sorted(unknown))}")
        enabled = [q for q in enabled if q in queues]
    if not enabled:
        return None
    # The inputs are read before the run's epoch is allocated: every commit the run sees then has
    # an older epoch than the run's, so the run's events outrank them (a decision committed in
    # between would otherwise outrank the delivery of the message it put back in TBDL). Only the
    # messages that are not final can be due: the open snapshot and the events after it.
    # The queues' hand-overs are taken first: an ask that still finds one committed before this
    # read, which sees what it asked for; a later one finds none, and hands the queue over again
    # or marks this run's lock wanted (delivery_dispatch), so nothing waits for beat's tick.
    delivery_handovers_take(queues=enabled)
    inputs = lake_due_inputs()
    run = _run_start(enabled)
    if run is None:
        log.info("every queue of this run is held by another run; this one is skipped")
        return None
    # The run's id as its events in the lake carry it (run_id), and a message's history shows.
    with log_context(run_id=str(run.id), queue=",".join(run.queues)):
        return _run_deliver(
            run, inputs, now=now, fixed_clock=fixed_clock, partitions=partitions, spark=spark
        )


def _run_deliver(run, inputs, *, now, fixed_clock, partitions, spark):
    """A run that holds its queues: its due messages delivered, and the outcome committed."""
    from console.spark import spark_from_settings
    from workers.jobs.delivery import DeliveryParams, run_delivery
    from workers.jobs.delivery_local import due_rows, run_delivery_local

    store = lake()
    at = now or datetime.now(UTC)
    policies = _policies()
    try:
        due = None
        if settings.DELIVERY_LOCAL_MAX:
            # Few due messages: no Spark job (a job's own cost is most of a small run's).
            due = due_rows(
                store.paths(inputs.snapshot_paths),
                store.paths(inputs.event_paths),
                queues=run.queues,
                now=at,
            )
            if due is not None and due.num_rows > settings.DELIVERY_LOCAL_MAX:
                due = None  # many due: the Spark job
        by_body = any(policies.get(q, {}).get("poison_match") == "id_or_body" for q in run.queues)
        # A small run that matches no body reads only its messages' entries of the poison list.
        poison_ids, poison_hashes, poison_cursor = _poison_lists(
            message_ids=due.column("message_id").to_pylist()
            if due is not None and not by_body
            else None
        )
    except Exception as exc:
        log.exception("delivery run %s failed", run.id)
        _run_fail(run, f"{exc.__class__.__name__}: {exc}")
        raise
    label = f"run{run.id}"
    paths = {
        "claims": store.new_dir("claims", label),
        "claimed": store.new_dir("events", f"{label}-claimed"),
        "events": store.new_dir("events", label),
        "conversation": store.new_dir("events", f"{label}-conversations"),
        "notifications": store.new_dir("notifications", label),
        "scratch": store.new_dir("claims", f"{label}-scratch"),
    }
    params = DeliveryParams(
        run_id=str(run.id),
        epoch=run.epoch,
        now=at,
        policies=policies,
        queues=run.queues,
        message_paths=store.paths(lake_paths(dataset="messages")),
        snapshot_paths=store.paths(inputs.snapshot_paths),
        event_paths=store.paths(inputs.event_paths),
        claims_path=store.path(paths["claims"]),
        claim_events_path=store.path(paths["claimed"]),
        events_path=store.path(paths["events"]),
        conversation_events_path=store.path(paths["conversation"]),
        notifications_path=store.path(paths["notifications"]),
        scratch_path=store.path(paths["scratch"]),
        poison_ids=poison_ids,
        poison_hashes=poison_hashes,
        poison_cursor=poison_cursor,
        poison_feed_dir=poison_feed_dir(),
        fixed_clock=fixed_clock,
        max_batch=settings.DELIVERY_BATCH_SIZE,
        max_batch_bytes=settings.DELIVERY_BATCH_BYTES,
        handler_timeout=float(settings.HANDLER_TIMEOUT_SECONDS),
        partitions=partitions,
    )

    def on_claimed(claimed):
        # R1: from here until the outcome is committed, every reader sees these messages DLNG,
        # taken by this run. The lease record (claims_path) and the DLNG events become visible
        # together: a run that dies before this has called no handler and holds nothing.
        with transaction.atomic():
            won = DeliveryRun.objects.filter(id=run.id, status=DeliveryRun.RUNNING).update(
                claims_path=paths["claims"], claimed=claimed.claimed
            )
            if won != 1:
                raise leases.LeaseLost(f"delivery run {run.id} lost its lease before delivering")
            lake_commit_record(
                dataset="events",
                path=paths["claimed"],
                row_count=claimed.claim_events,
                idempotency_key=f"delivery:{run.id}:claimed",
                epoch=run.epoch,
            )

    def session():
        return spark or spark_from_settings()

    heartbeat = leases.Heartbeat(DeliveryRun, run.id)
    heartbeat.start()
    try:
        if due is not None:
            result = run_delivery_local(params, due, on_claimed=on_claimed, spark=session)
        else:
            result = run_delivery(session(), params, on_claimed=on_claimed)
    except Exception as exc:
        heartbeat.stop()
        log.exception("delivery run %s failed", run.id)
        _run_fail(run, f"{exc.__class__.__name__}: {exc}")
        raise
    finally:
        shutil.rmtree(params.scratch_path, ignore_errors=True)
    heartbeat.stop()
    _run_commit(run, result, paths)
    run.refresh_from_db()
    if result.claimed and run.status == DeliveryRun.COMMITTED:
        outcomes = ", ".join(f"{state} {n}" for state, n in sorted(result.outcomes.items()))
        log.info("delivery run %s: %s claimed; %s", run.id, result.claimed, outcomes or "none")
    return run


def _run_commit(run, result, paths):
    outcomes = {
        "claimed": result.claimed,
        "events": result.events,
        "states": result.outcomes,
        "conversation_events": result.conversation_events,
        "notifications": result.notifications,
        "disabled": result.disabled,
        "handler_seconds": result.handler_times,
    }
    with transaction.atomic():
        if not _run_leave(run, status=DeliveryRun.COMMITTED, outcomes=outcomes):
            # The sweeper declared this run dead and recovered its claims first; what it wrote
            # stays invisible, as if the run had died.
            log.warning("delivery run %s lost its lease before committing", run.id)
            return
        key = f"delivery:{run.id}"
        outputs = (
            ("events", paths["events"], result.events, key),
            ("events", paths["conversation"], result.conversation_events, f"{key}:conversations"),
            ("notifications", paths["notifications"], result.notifications, key),
        )
        for dataset, path, rows, idempotency_key in outputs:
            if rows:
                lake_commit_record(
                    dataset=dataset,
                    path=path,
                    row_count=rows,
                    idempotency_key=idempotency_key,
                    epoch=run.epoch,
                )
        poison_add(entries=_with_hashes(result.quarantined), source="engine")
        _queues_record(result)
    run.claims_path = paths["claims"]
    _claims_discard(run)


def _queues_record(result):
    """R11: carry each queue's failure streak to the next run; disable those that reached it."""
    for name, streak in result.streaks.items():
        Queue.objects.filter(name=name).update(consecutive_failures=streak)
    for name, reason in result.disabled.items():
        if Queue.objects.filter(name=name, enabled=True).update(
            enabled=False, disabled_at=timezone.now(), disabled_reason=reason
        ):
            audit_record(
                actor="system",
                action="queue.disabled",
                target_type="queue",
                target_id=name,
                details={"reason": reason},
            )
        log.warning("queue %s disabled: %s", name, reason)


def _run_fail(run, error):
    # Its queues are free again at once: what it claimed is DLNG in the ledger, so no new run
    # takes it before the recovery below hands it back.
    with transaction.atomic():
        won = _run_leave(run, status=DeliveryRun.FAILED, error=error)
    if won:
        run.refresh_from_db()
        delivery_run_recover(run=run, why=f"delivery run {run.id} failed: {error[:500]}")


def delivery_run_recover(*, run, why):
    """R7 for a run that died: every message it claimed was in DLNG under its lease. Each goes
    back to TBDL flagged as a blacklist candidate, or to NDLV if it already was one and was alone
    (R8). Idempotent: a second call finds the commit and does nothing."""
    key = f"recover:{run.id}"
    if run.recovered or lake_committed(idempotency_key=key) or not run.claims_path:
        DeliveryRun.objects.filter(id=run.id).update(recovered=True)
        return 0
    store = lake()
    claims_dir = store.path(run.claims_path)
    if not os.path.isdir(claims_dir):
        DeliveryRun.objects.filter(id=run.id).update(recovered=True)
        return 0
    claims = pads.dataset(claims_dir, schema=CLAIM_SCHEMA, format="parquet")
    size = claims.count_rows()
    epoch = epoch_allocate(purpose=f"recover run {run.id}")
    at = datetime.now(UTC)
    actor = f"sweeper/{leases.worker_name()}"
    quarantined = []
    step = itertools.count(1)

    def recovered_events():
        # A claims batch at a time: a run of a million messages recovers in bounded memory.
        for batch in claims.to_batches():
            events = []
            for claim in batch.to_pylist():
                # In DLNG since the run's claim events were committed with its lease record.
                _, current = rules.start_attempt(
                    dict(claim, state=claim["to_state"]),
                    at=run.started_at,
                    actor=run.worker or actor,
                    run_id=str(run.id),
                )
                outcome = rules.crashed(
                    current,
                    at=at,
                    actor=actor,
                    run_id=str(run.id),
                    batch_size=size,
                    in_flight=False,
                    detail=why,
                )
                for ev in outcome:
                    ev["epoch"] = epoch
                    ev["step"] = next(step)
                    events.append(ev)
                if outcome[-1]["to_state"] == S.NDLV:
                    quarantined.append(
                        (claim["message_id"], outcome[-1]["queue"], outcome[-1]["reason"], "")
                    )
            yield pa.Table.from_pylist(events, schema=EVENT_SCHEMA)

    path = store.new_dir("events", f"recover{run.id}")
    rows = store.write_stream(recovered_events(), path, schema=EVENT_SCHEMA)
    with transaction.atomic():
        lake_commit_record(
            dataset="events", path=path, row_count=rows, idempotency_key=key, epoch=epoch
        )
        poison_add(entries=_with_hashes(quarantined), source="engine")
        DeliveryRun.objects.filter(id=run.id).update(recovered=True)
    _claims_discard(run)
    log.warning("recovered %s message(s) claimed by dead run %s: %s", size, run.id, why)
    return size


def _claims_discard(run):
    """Claims are the run's lease record; once its outcome or its recovery is committed they
    say nothing the ledger does not."""
    if run.claims_path:
        shutil.rmtree(lake().path(run.claims_path), ignore_errors=True)


def _with_hashes(entries):
    from console.ingest.models import MessageKey

    hashes = {}
    for start in range(0, len(entries), 900):
        ids = [e[0] for e in entries[start : start + 900]]
        hashes.update(
            MessageKey.objects.filter(message_id__in=ids).values_list("message_id", "body_sha256")
        )
    return [(mid, q, reason, hashes.get(mid, "")) for mid, q, reason, _ in entries]


def _run_left(run, **fields):
    with transaction.atomic():
        # False: it committed (or another sweeper took it) meanwhile.
        return _run_leave(run, **fields)


def leases_sweep(*, now=None):
    """Declare dead every run whose heartbeat stopped, and recover what it held (R7)."""
    close_old_connections()
    leases.sweep_stale(DeliveryRun, now=now, status=DeliveryRun.CRASHED, leave=_run_left)
    recovered = 0
    pending = DeliveryRun.objects.filter(
        status__in=[DeliveryRun.CRASHED, DeliveryRun.FAILED], recovered=False
    )
    for run in pending:
        recovered += delivery_run_recover(
            run=run, why=f"delivery run {run.id} stopped: {run.error or run.status}"
        )
    return recovered
