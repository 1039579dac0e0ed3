"""Running lake queries on the spark worker (the Spark job of workers.jobs.lake_query), and the
sweeper that finds lost ones.

A query keeps its state in its row. It is claimed with a conditional update (QUEUED -> RUNNING,
or a RUNNING one whose heartbeat stopped), holds a heartbeat while Spark works, and records its
result in one transaction that succeeds only for the claim that still holds it. Its result is a
new lake directory that nothing points at until that transaction names it, so a run that dies or
loses its claim leaves nothing visible. Tasks may be lost: the sweeper hands queued and dead
queries to the broker again, and a duplicate task finds its query taken and does nothing.

A query runs at most LAKE_QUERY_TIMEOUT_SECONDS: then its heartbeat fails it, readably, and
cancels its Spark jobs the way a person's cancel does, so that the worker's slot is free again.
"""

import logging
import shutil
import time

import pyarrow as pa
from django.conf import settings
from django.db import transaction
from django.utils.dateparse import parse_datetime

from console import leases
from console.audit.services import audit_record
from console.lake.selectors import lake_paths, lake_state_inputs
from console.lake.services import lake
from console.lakequery.criteria import job_criteria
from console.lakequery.models import LakeQuery
from console.readmodels.models import MessageIndex

log = logging.getLogger(__name__)

# How often a running query writes its heartbeat and progress (at most HEARTBEAT_SECONDS).
PROGRESS_SECONDS = 2


# --- Running -------------------------------------------------------------------------------------


def lake_query_run(*, query_id, spark=None):
    """Run one query on Spark, if this caller wins it. Returns the query as it ends (DONE,
    FAILED, or CANCELLED while it ran), or None when it was not this caller's to run.

    A failure is recorded on the query, readably, and not raised: it is the query's outcome
    (a regular expression Spark refuses, say), not the worker's."""
    from console.spark import spark_from_settings
    from workers.spark import tracked_jobs

    worker = leases.claim(LakeQuery, query_id, progress=0)
    if worker is None:
        log.info("lake query %s is not waiting to run; nothing to do", query_id)
        return None
    query = LakeQuery.objects.get(id=query_id)
    store = lake()
    inputs = lake_state_inputs()
    job = (
        _why_job(query, store, inputs)
        if query.kind == LakeQuery.WHY
        else _search_job(query, store, inputs)
    )
    # A session that cannot start is the worker's failure, not the query's: it propagates, the
    # query's heartbeat never starts, and the sweeper hands the query over again.
    session = spark or spark_from_settings()
    try:
        tag = f"lake-query-{query.id}-{worker.rsplit(':', 1)[-1]}"
        jobs = tracked_jobs(session, tag, f"lake query {query.id}")
        # The clock starts with the Spark work: a JVM that starts first is not the query's cost.
        heartbeat = QueryHeartbeat(
            query.id, worker, jobs, timeout_seconds=settings.LAKE_QUERY_TIMEOUT_SECONDS
        )
        heartbeat.start()
        try:
            outcome = job.run(session)
        finally:
            heartbeat.stop()
            jobs.close()
            job.scratch_remove()
    except Exception as exc:
        job.result_remove()
        if _finish(query.id, worker, status=LakeQuery.FAILED, error=readable_error(exc)):
            log.warning("lake query %s failed", query.id, exc_info=True)
        else:
            log.info(
                "lake query %s stopped: cancelled, timed out or taken over while it ran", query.id
            )
        query.refresh_from_db()
        return query
    won = _finish(query.id, worker, status=LakeQuery.DONE, upto=inputs.last_event_commit, **outcome)
    if not won:
        # Cancelled or timed out while it ran, or taken over after its heartbeat stopped: its
        # result is nobody's, and nothing points at it.
        job.result_remove()
        log.info(
            "lake query %s ended without this run's result (cancelled, timed out or taken over)",
            query.id,
        )
    query.refresh_from_db()
    return query


class _Job:
    """One kind of query's Spark work: `run(session)` returns what its row records; the
    directory its result is written to is removed when the result is nobody's, the scratch one
    (what the console staged for it) after every run."""

    def __init__(self, run, *, result_dir=None, scratch_dir=None):
        self.run = run
        self.result_dir = result_dir
        self.scratch_dir = scratch_dir

    def result_remove(self):
        if self.result_dir:
            shutil.rmtree(self.result_dir, ignore_errors=True)

    def scratch_remove(self):
        if self.scratch_dir:
            shutil.rmtree(self.scratch_dir, ignore_errors=True)


def _search_job(query, store, inputs):
    """A search (workers.jobs.lake_query): its matches, written to a new lake directory."""
    from workers.jobs.lake_query import LakeQueryParams, run_lake_query

    result_path = store.new_dir("query-results", f"query{query.id}")
    params = LakeQueryParams(
        criteria=job_criteria(query.criteria),
        snapshot_paths=store.paths(inputs.snapshot_paths),
        event_paths=store.paths(inputs.event_paths),
        message_paths=store.paths(lake_paths(dataset="messages")),
        out_dir=store.path(result_path),
    )

    def run(session):
        result = run_lake_query(session, params)
        return {"result_path": result_path, "scanned": result.scanned, "matched": result.matched}

    return _Job(run, result_dir=params.out_dir)


def _why_job(query, store, inputs):
    """Why a failure group's messages fail (workers.jobs.failure_traits): its members, as the
    message index has them now, staged for the job; its findings recorded on the row."""
    from workers.jobs.failure_traits import WhyParams, run_why_fail

    criteria = query.criteria
    ids = MessageIndex.objects.filter(group_id=criteria["group"]).values_list(
        "message_id", flat=True
    )
    staged = store.new_dir("query-staging", f"why{query.id}")
    store.write_arrow(pa.table({"message_id": pa.array(list(ids), pa.string())}), staged)
    params = WhyParams(
        ids_path=store.path(staged),
        queue=criteria["queue"],
        since=parse_datetime(criteria["since"]) if criteria.get("since") else None,
        until=parse_datetime(criteria["until"]) if criteria.get("until") else None,
        sample=settings.WHY_FAIL_SAMPLE,
        snapshot_paths=store.paths(inputs.snapshot_paths),
        event_paths=store.paths(inputs.event_paths),
        message_paths=store.paths(lake_paths(dataset="messages")),
        seed=query.id,
    )

    def run(session):
        result = run_why_fail(session, params)
        return {
            "analysis": result.as_dict(),
            "scanned": result.failures_read + result.deliveries_read,
            "matched": len(result.findings),
        }

    return _Job(run, scratch_dir=store.path(staged))


def _finish(query_id, worker, *, status, error="", audited=None, **result):
    """Record the outcome, and its audit entry (with `audited` besides the outcome), in one
    transaction; only the claim that holds the query may. Returns True if it did."""
    with transaction.atomic():
        won = leases.finish(
            LakeQuery,
            query_id,
            worker=worker,
            status=status,
            error=error,
            **({"progress": 100} if status == LakeQuery.DONE else {}),
            **result,
        )
        if not won:
            return False
        # A "why" query's findings are on its row; the trail keeps what it read and found.
        details = {"status": status, **{k: v for k, v in result.items() if k != "analysis"}}
        if error:
            details["error"] = error
        details.update(audited or {})
        audit_record(
            actor="system",
            action="lake_query.finished",
            target_type="lake_query",
            target_id=query_id,
            details=details,
        )
    return True


def timeout_error(seconds):
    """What a person reads on a query stopped by LAKE_QUERY_TIMEOUT_SECONDS."""
    return (
        f"stopped after {seconds} second{'' if seconds == 1 else 's'}: "
        "LAKE_QUERY_TIMEOUT_SECONDS, the longest a lake query "
        "may run. Narrow it (queues, states, enqueue times, an id prefix) so that fewer bodies "
        "are searched, or ask an administrator to raise the limit."
    )


def readable_error(exc):
    """What a person reads on the query's page: the error's first line, no stack trace."""
    from workers.jobs.lake_query import QueryRefused, spark_message

    if isinstance(exc, QueryRefused):
        return str(exc)
    return f"{exc.__class__.__name__}: {spark_message(exc)}"[:2000]


class QueryHeartbeat(leases.Heartbeat):
    """The query's heartbeat, which also writes its progress; when the query is no longer this
    run's (cancelled, or taken over), it cancels the run's Spark jobs. `jobs` is the run's
    workers.spark.tracked_jobs: a job group in a classic session, tagged operations over Spark
    Connect.

    It also keeps the query's time: `timeout_seconds` after it was made (None: no limit), it
    fails the query with `timeout_error` and cancels the jobs the same way."""

    def __init__(self, query_id, worker, jobs, *, timeout_seconds=None):
        interval = min(PROGRESS_SECONDS, settings.HEARTBEAT_SECONDS)
        super().__init__(LakeQuery, query_id, interval, owner=worker)
        self.worker = worker
        self.jobs = jobs
        self.progress = 0
        self.timeout_seconds = timeout_seconds
        self.deadline = None if timeout_seconds is None else time.monotonic() + timeout_seconds
        self.lost = False  # the query is no longer this run's: only cancelling is left to do

    def _progress(self):
        try:
            found = self.jobs.progress()
        except Exception:
            log.warning("lake query %s: Spark's progress did not answer", self.row_id)
            return self.progress
        # Jobs of the query start one after another: never go back, and 100 only when done.
        if found is not None:
            self.progress = max(self.progress, min(99, found))
        return self.progress

    def beat(self):
        # In the base class's loop: a failed write is tried again at the next beat, and the
        # connection goes back to the pool after each.
        if self.lost:
            # Again at every beat until the run ends: a cancel reaches only the jobs running
            # when it is sent, and the run may have started its next one since.
            self._cancel()
            return
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self._time_out()
            return
        progress = self._progress()
        if leases.heartbeat(LakeQuery, self.row_id, worker=self.owner, progress=progress):
            return
        log.info("lake query %s is no longer this run's: cancelling", self.row_id)
        self.lost = True
        self._cancel()

    def _time_out(self):
        error = timeout_error(self.timeout_seconds)
        audited = {"timeout_seconds": self.timeout_seconds}
        if _finish(self.row_id, self.worker, status=LakeQuery.FAILED, error=error, audited=audited):
            log.warning(
                "lake query %s ran past LAKE_QUERY_TIMEOUT_SECONDS (%s s): cancelling its "
                "Spark jobs",
                self.row_id,
                self.timeout_seconds,
            )
        else:
            log.info("lake query %s is no longer this run's: cancelling", self.row_id)
        self.lost = True
        self._cancel()

    def _cancel(self):
        try:
            self.jobs.cancel()
        except Exception:
            # Its result is nobody's anyway: the run only takes longer to end (the next beat
            # tries again).
            log.warning("lake query %s: Spark did not take the cancel", self.row_id)


# --- The sweeper ---------------------------------------------------------------------------------


def lake_queries_sweep(*, enqueue, now=None):
    """Hand queued queries that waited over a minute, and running ones whose heartbeat stopped,
    to the broker again with `enqueue(query_id)` (at most once a minute each); give up on a
    query whose worker died MAX_ATTEMPTS times. Returns the ids handed over."""
    return leases.sweep_lost(
        LakeQuery,
        enqueue=enqueue,
        finish_given_up=lambda query, error: _finish(
            query.id, query.worker, status=LakeQuery.FAILED, error=error
        ),
        now=now,
    )
