"""Running a purge (R15), and the sweeper that finds lost ones.

A purge keeps its state in its row, as a lake query does: it is claimed with a conditional update
(QUEUED -> RUNNING, or a RUNNING one whose heartbeat stopped), holds a heartbeat while it works,
and records its outcome in one transaction that only the claim still holding it can make. A run:

1. reads, under the lake commit lock, every message's current state and every commit it may
   rewrite (console.lake.selectors.lake_purge_inputs);
2. runs the Spark job (workers.jobs.purge): the final messages past their queue's retention, and,
   unless it is a dry run, each commit that held any of them rewritten without them;
3. counts and hashes the purged ids per queue; a dry run (a preview) records that and stops;
4. moves the rewritten directories into the lake's layout, stages the ids in the console DB and
   looks up the next sample of each failure group whose sample is purged;
5. swaps everything in one transaction: the lake's catalog (each rewritten commit keeps its id and
   shows its new directory; commits left empty and the old snapshot are retired), the message
   keys, the read models (console.readmodels.deltas), the record and its audit entry.
From 2 to 5 it holds the refresh lock, so that no refresh loads rows computed from the lake as it
was before. The old directories are deleted PURGE_GRACE_SECONDS later (`purge_dirs_delete`): a
delivery run or a query that listed them before the swap may still be reading them.
"""

import logging
import os
import shutil
import time
from datetime import timedelta
from itertools import pairwise
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from console import leases
from console.audit.services import audit_record
from console.ingest.models import MessageKey
from console.lake.selectors import lake_paths, lake_purge_inputs
from console.lake.services import (
    lake,
    lake_commit_lock,
    lake_commits_rewrite,
    lake_history_dirs_delete,
    lake_rewrite_held,
    lake_rewrite_holders,
    lake_rewrites_release,
)
from console.lake.signals import events_to_fold
from console.queues.models import Queue
from console.readmodels.deltas import (
    purged_staged,
    read_models_forget,
    read_models_purge_samples,
    refresh_lock_held,
    refresh_lock_still_held,
)
from console.retention.models import PurgeRun
from console.retention.services import purge_create
from workers.engine import states as S
from workers.engine.policy import DEFAULTS
from workers.jobs import purge as J
from workers.lake.schema import EVENT_SCHEMA

log = logging.getLogger(__name__)

# The purge task's time limit: how long the compactions wait for a purge that dies holding the
# lake (console.lake.services.lake_rewrite_held).
TIME_LIMIT_SECONDS = 3600


# --- Running -------------------------------------------------------------------------------------


def purge_run(*, now=None, queue=None, dry_run=False, actor="system", spark=None):
    """Purge (or, `dry_run`, preview) in the foreground, as of `now` (the clock: tests and
    simulations choose it; by default the present). Returns the PurgeRun as it ended.

    Raises PurgeBusy when another purge is queued or running."""
    purge = purge_create(actor=actor, dry_run=dry_run, queue=queue or "")
    return purge_execute(purge_id=purge.id, now=now, spark=spark)


def purge_execute(*, purge_id, now=None, spark=None):
    """Run one purge, if this caller wins it. Returns the purge as it ended (DONE or FAILED), or
    None when it was not this caller's to run. A failure is recorded on the purge, not raised."""
    worker = leases.claim(PurgeRun, purge_id)
    if worker is None:
        log.info("purge %s is not waiting to run; nothing to do", purge_id)
        return None
    purge = PurgeRun.objects.get(id=purge_id)
    if purge.work_dir:
        # What an attempt that died left behind: nothing points at it.
        shutil.rmtree(lake().path(purge.work_dir), ignore_errors=True)
    if purge.now is None:
        purge.now = now or timezone.now()
    store = lake()
    purge.work_dir = store.new_dir("purge-work", f"purge{purge.id}")
    PurgeRun.objects.filter(id=purge.id, worker=worker).update(
        now=purge.now, work_dir=purge.work_dir
    )
    heartbeat = leases.Heartbeat(PurgeRun, purge.id, owner=worker)
    heartbeat.start()
    written = []  # directories this attempt made, removed unless it commits
    try:
        if purge.dry_run:
            _preview(purge, worker, spark, written)
        else:
            purge_dirs_delete(now=purge.now)
            with (
                lake_rewrite_held(holder=_hold(purge.id), seconds=TIME_LIMIT_SECONDS),
                refresh_lock_held(holder=f"purge {purge.id}") as refresh_lock,
            ):
                _purge(purge, worker, spark, written, refresh_lock)
            # Refreshes were kept off meanwhile: ask for one now rather than at beat's next tick.
            events_to_fold.send(sender=PurgeRun)
    except leases.LeaseLost:
        log.warning("purge %s: another worker took it over; this one stops", purge.id)
        _remove(written)
    except Exception as exc:
        log.exception("purge %s failed", purge.id)
        _remove(written)
        _finish(purge, worker, status=PurgeRun.FAILED, error=f"{exc.__class__.__name__}: {exc}")
    finally:
        heartbeat.stop()
        shutil.rmtree(store.path(purge.work_dir), ignore_errors=True)
    purge.refresh_from_db()
    return purge


def _hold(purge_id):
    """A purge's name on its hold of the lake (console.lake.services.lake_rewrite_held)."""
    return f"purge:{purge_id}"


def _holds_of_purges_over():
    """The holds on the lake of purges that are no longer queued or running."""
    held = {}
    for holder in lake_rewrite_holders():
        kind, _, number = holder.partition(":")
        if kind == "purge" and number.isdigit():
            held[int(number)] = holder
    active = set(
        PurgeRun.objects.filter(id__in=list(held), status__in=PurgeRun.ACTIVE).values_list(
            "id", flat=True
        )
    )
    return [holder for purge_id, holder in held.items() if purge_id not in active]


def _params(purge, inputs, ids_dir, dry_run):
    store = lake()
    days = dict(Queue.objects.values_list("name", "retention_days"))
    return J.PurgeParams(
        now=purge.now,
        retention_days=days,
        default_days=DEFAULTS["retention_days"],
        queue=purge.queue or None,
        lake_root=str(store.root),
        state_paths=store.paths([*inputs.state.snapshot_paths, *inputs.state.event_paths]),
        snapshot_path=store.path(inputs.snapshot_path) if inputs.snapshot_path else None,
        open_path=store.path(inputs.open_snapshot[1]) if inputs.open_snapshot else None,
        events=inputs.events,
        messages=inputs.messages,
        history=inputs.history,
        ids_path=store.path(ids_dir),
        out_dir=store.path(purge.work_dir),
        dry_run=dry_run,
    )


def _read():
    """What the purge reads of the lake's catalog, with no commit landing in between."""
    with transaction.atomic():
        lake_commit_lock()
        return lake_purge_inputs()


def _spark(spark):
    if spark is not None:
        return spark
    from console.spark import spark_from_settings

    return spark_from_settings()


def _begin(purge, written, *, dry_run):
    """Reads what the purge works on and gives its ids a new directory (a preview's or a
    purge's alike): the inputs, that directory, and the Spark job's parameters."""
    store = lake()
    inputs = _read()
    ids_dir = store.new_dir("purges", f"purge{purge.id}-ids")
    written.append(ids_dir)
    return inputs, ids_dir, _params(purge, inputs, ids_dir, dry_run=dry_run)


def _upto(inputs):
    """The last event and message commits the purge read: what its summary covers."""
    return {
        "events_upto": inputs.state.last_event_commit,
        "messages_upto": inputs.messages[-1][0] if inputs.messages else None,
    }


def _preview(purge, worker, spark, written):
    inputs, ids_dir, params = _begin(purge, written, dry_run=True)
    J.run_purge(_spark(spark), params)
    summary = J.ids_summary(params.ids_path)
    _finish(purge, worker, status=PurgeRun.DONE, summary=summary, ids_path=ids_dir, **_upto(inputs))


def _purge(purge, worker, spark, written, refresh_lock):
    inputs, ids_dir, params = _begin(purge, written, dry_run=False)
    clock = {"start": time.perf_counter()}
    result = J.run_purge(_spark(spark), params)
    clock["spark"] = time.perf_counter()
    summary = J.ids_summary(params.ids_path)
    upto = _upto(inputs)
    if summary.count == 0:
        _finish(purge, worker, status=PurgeRun.DONE, summary=summary, ids_path=ids_dir, **upto)
        return
    rewritten, emptied, body_paths = {}, {}, {}
    changes = {}
    for dataset, read, kept in (
        ("events", inputs.events, result.events),
        ("messages", inputs.messages, result.messages),
        ("history", [(g.id, g.path) for g in inputs.history], result.history),
    ):
        paths = dict(read)
        changes[dataset] = {"rewritten": 0, "retired": 0}
        for commit_id, rows in kept.items():
            if rows == 0:
                emptied[commit_id] = paths[commit_id]
                changes[dataset]["retired"] += 1
                continue
            source = J.rewritten_dir(params.out_dir, dataset, commit_id)
            new = _move(source, dataset, f"purge{purge.id}-c{commit_id}")
            written.append(new)
            rewritten[commit_id] = (paths[commit_id], new, rows)
            changes[dataset]["rewritten"] += 1
            if dataset == "messages":
                body_paths[paths[commit_id]] = new
    snapshot_read = snapshot_new = None
    if result.state_rows is not None:
        snapshot_read = (inputs.state.snapshot_id, inputs.snapshot_path)
        new = _move(f"{params.out_dir}/state", "state", f"purge{purge.id}")
        written.append(new)
        snapshot_new = (new, result.state_rows)
    changes["state"] = {"rewritten": int(snapshot_new is not None)}
    open_read, open_new = inputs.open_snapshot, None
    changes["open"] = {"rewritten": int(result.open_rows is not None)}
    if result.open_rows is not None:
        new = _move(f"{params.out_dir}/open", "open", f"purge{purge.id}")
        written.append(new)
        open_new = (new, result.open_rows)
    inflow = J.inflow_rows(params.out_dir)
    clock["moved"] = time.perf_counter()
    with purged_staged(J.ids_batches(params.ids_path)) as staged:
        clock["staged"] = time.perf_counter()
        samples = _samples(read_models_purge_samples(staged=staged))
        clock["samples"] = time.perf_counter()
        with transaction.atomic():
            if not leases.held(PurgeRun, purge.id, worker=worker):
                raise leases.LeaseLost
            if not refresh_lock_still_held(refresh_lock):
                raise RuntimeError("the refresh lock was taken over: this purge stops")
            gone = lake_commits_rewrite(
                rewritten=rewritten,
                emptied=emptied,
                snapshot_read=snapshot_read,
                snapshot_new=snapshot_new,
                idempotency_key=f"state:purge:{purge.id}",
                history_read=[g.id for g in inputs.history],
                open_read=open_read,
                open_new=open_new,
            )
            _message_keys_forget(staged)
            read_models_forget(
                staged=staged,
                queue_counts=summary.states,
                inflow=inflow,
                body_paths=body_paths,
                samples=samples,
            )
            _finish(
                purge,
                worker,
                status=PurgeRun.DONE,
                summary=summary,
                ids_path=ids_dir,
                lake_changes=changes,
                pending_dirs=gone,
                **upto,
            )
    written.clear()  # committed: the new directories are the lake's now
    clock["swapped"] = time.perf_counter()
    steps = list(clock.items())
    log.info(
        "purge %s: %s purged; %s",
        purge.id,
        summary.count,
        ", ".join(f"{b[0]} {b[1] - a[1]:.1f} s" for a, b in pairwise(steps)),
    )


def _move(source, dataset, label):
    """A directory the job wrote, moved to a fresh path of the lake's layout (dataset/day/name,
    which the refresh reads a body's directory from)."""
    store = lake()
    target = store.new_dir(dataset, label)
    Path(store.path(target)).parent.mkdir(parents=True, exist_ok=True)
    os.rename(source, store.path(target))
    return target


def _remove(written):
    store = lake()
    for relpath in written:
        shutil.rmtree(store.path(relpath), ignore_errors=True)


def _message_keys_forget(staged):
    """The purged ids are forgotten: a message sent again with one of them is a new message.
    Keeping their keys would refuse it as a duplicate for ever, and keep a row per message ever
    received (the console database would grow as the lake no longer does); the message's page
    and API answer 404 for an id the product no longer knows."""
    table = connection.ops.quote_name(MessageKey._meta.db_table)
    column = connection.ops.quote_name("message_id")
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {table} WHERE {column} IN (SELECT message_id FROM {staged})"  # noqa: S608
        )


def _clean(text):
    """As the refresh keeps text (workers.jobs.refresh._clean): never null, no NUL character."""
    return (text or "").replace("\x00", "")


def _samples(next_ids):
    """{fingerprint: the sample fields} of the groups whose sample is purged and that keep a
    member: each one's next sample and its latest failure's reason and stack, read from the
    lake (a file at a time, only the files that hold one of them)."""
    wanted_ids = sorted({m for m in next_ids.values() if m})
    if not wanted_ids:
        return {}
    store = lake()
    wanted = pc.field("message_id").isin(wanted_ids)
    failed = (pc.field("from_state") == S.DLNG) & pc.field("to_state").isin(sorted(S.FAILED_TO))
    columns = ["message_id", "epoch", "step", "reason", "stack"]
    tables = []
    for relpath in lake_paths(dataset="events"):
        dataset = pads.dataset(store.path(relpath), schema=EVENT_SCHEMA, format="parquet")
        for fragment in dataset.get_fragments():
            # Only the id column is read to find out; the stacks only of the files that hold one.
            if fragment.count_rows(filter=wanted):
                tables.append(fragment.to_table(columns=columns, filter=wanted & failed))
    latest = {}
    for row in pa.concat_tables(tables).to_pylist() if tables else []:
        known = latest.get(row["message_id"])
        if known is None or (row["epoch"], row["step"]) > (known["epoch"], known["step"]):
            latest[row["message_id"]] = row
    return {
        fingerprint: {
            "sample_message_id": message_id,
            "sample_reason": _clean(latest.get(message_id, {}).get("reason")),
            "sample_stack": _clean(latest.get(message_id, {}).get("stack")),
        }
        for fingerprint, message_id in next_ids.items()
        if message_id
    }


def _finish(purge, worker, *, status, error="", summary=None, **fields):
    """Record the outcome and its audit entry; only the claim that holds the purge may. Returns
    True if it did."""
    if summary is not None:
        fields |= {"counts": summary.queues, "total": summary.count, "ids_sha256": summary.sha256}
    with transaction.atomic():
        if not leases.finish(
            PurgeRun, purge.id, worker=worker, status=status, error=error, **fields
        ):
            return False
        # Over: its hold on the lake goes with it, whether or not it lives to let go itself.
        lake_rewrites_release(holders=[_hold(purge.id)])
        purge.refresh_from_db()
        details = {
            "dry_run": purge.dry_run,
            "queue": purge.queue,
            "now": purge.now.isoformat() if purge.now else None,
            "requested_by": purge.requested_by,
        }
        if status == PurgeRun.DONE:
            action = "retention.previewed" if purge.dry_run else "retention.purged"
            details |= {
                "total": purge.total,
                "ids_sha256": purge.ids_sha256,
                "counts": purge.counts,
                "ids_path": purge.ids_path,
            }
        else:
            action = "retention.failed"
            details["error"] = error[:1000]
        audit_record(
            actor=purge.requested_by,
            action=action,
            target_type="purge",
            target_id=purge.id,
            details=details,
        )
    return True


# --- Old directories -----------------------------------------------------------------------------


def purge_dirs_delete(*, now=None):
    """Delete the directories purges swapped out PURGE_GRACE_SECONDS ago or more. Returns how
    many it deleted."""
    now = now or timezone.now()
    grace = timedelta(seconds=settings.PURGE_GRACE_SECONDS)
    store = lake()
    deleted = 0
    due = PurgeRun.objects.filter(
        status=PurgeRun.DONE, dirs_deleted_at__isnull=True, finished_at__lte=now - grace
    ).exclude(pending_dirs=[])
    for purge in due:
        for relpath in purge.pending_dirs:
            shutil.rmtree(store.path(relpath), ignore_errors=True)
            deleted += 1
        PurgeRun.objects.filter(id=purge.id).update(dirs_deleted_at=now)
    return deleted


# --- The sweeper ---------------------------------------------------------------------------------


def _given_up(purge, error):
    if not _finish(purge, purge.worker, status=PurgeRun.FAILED, error=error):
        return False
    if purge.work_dir:
        shutil.rmtree(lake().path(purge.work_dir), ignore_errors=True)
    return True


def purges_sweep(*, enqueue, now=None):
    """Hand queued purges that waited over a minute, and running ones whose heartbeat stopped, to
    the broker again with `enqueue(purge_id)` (at most once a minute each); give up on a purge
    whose worker died MAX_ATTEMPTS times; delete old directories (a purge's, merged history
    generations) past their grace period.
    Returns the ids handed over."""
    now = now or timezone.now()
    handed = leases.sweep_lost(PurgeRun, enqueue=enqueue, finish_given_up=_given_up, now=now)
    # A hold left by a purge that is over (its worker died before letting go) lapses only
    # after the purge's time limit: the compactions need not wait that long.
    lake_rewrites_release(holders=_holds_of_purges_over())
    purge_dirs_delete(now=now)
    # Merged-away history generations may hold messages purged since: they go once their grace
    # period is over even when no compaction runs to delete them.
    lake_history_dirs_delete(now=now)
    return handed
