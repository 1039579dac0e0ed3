"""Running a lake query on the real Spark session: claimed once, its result recorded with its
counts in one transaction, a failure recorded readably, a cancelled query's result kept by
nobody, and its progress read from Spark's status tracker (a classic session's job group) or from
the progress reports of Spark Connect (workers.spark.ConnectJobs)."""

from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.utils import timezone

from console.audit.models import AuditEntry
from console.audit.selectors import audit_verify
from console.lakequery import execution
from console.lakequery.execution import QueryHeartbeat, lake_query_run
from console.lakequery.models import LakeQuery
from console.lakequery.selectors import lake_query_results
from console.lakequery.services import lake_query_cancel, lake_query_create
from workers.spark import ConnectJobs, JobGroup, job_group_progress


@pytest.fixture
def lake_ready(transactional_db, committed_lake, personas):
    return committed_lake


def create(personas, role="operator", **criteria):
    return lake_query_create(actor=personas[role], criteria=criteria)


def no_spark():
    """A classic session for a test whose job is replaced: its job group goes nowhere."""
    return SimpleNamespace(sparkContext=FakeContext(statusTracker=lambda: FakeTracker({})))


def results_dirs(lake_root):
    return sorted(p for p in (lake_root / "query-results").glob("*/*") if p.is_dir())


@pytest.mark.spark
def test_a_query_runs_to_done_with_its_counts_progress_and_result(
    lake_ready, personas, spark, lake_root
):
    _, last_events = lake_ready
    query = create(personas, states=["NDLV", "DLVD"], body_contains="declined")

    ran = lake_query_run(query_id=query.id, spark=spark)

    assert ran.status == LakeQuery.DONE, ran.error
    assert (ran.scanned, ran.matched, ran.progress, ran.upto) == (5, 1, 100, last_events.id)
    assert ran.result_path.startswith("query-results/")
    assert (ran.attempts, ran.error) == (1, "")
    assert ran.finished_at >= ran.started_at
    page = lake_query_results(query=ran)
    assert [(r["message_id"], r["state"], r["reason"]) for r in page.rows] == [
        ("b-text", "DLVD", "delivered")  # never failed, so never in the index: found all the same
    ]
    assert page.rows[0]["enqueued_at"].isoformat() == "2026-03-01T12:01:00+00:00"
    assert page.next_after is None
    finished = AuditEntry.objects.get(action="lake_query.finished")
    assert finished.details == {
        "status": "done",
        "result_path": ran.result_path,
        "scanned": 5,
        "matched": 1,
        "upto": last_events.id,
    }
    assert audit_verify().ok


@pytest.mark.spark
def test_a_query_is_run_once_however_often_its_task_arrives(lake_ready, personas, spark):
    query = create(personas, queues=["payments"])
    lake_query_run(query_id=query.id, spark=spark)

    assert lake_query_run(query_id=query.id, spark=spark) is None
    assert LakeQuery.objects.get(id=query.id).attempts == 1


@pytest.mark.spark
def test_a_regular_expression_spark_refuses_fails_the_query_readably(
    lake_ready, personas, spark, lake_root
):
    # Python compiles it; Java does not know the (?P<name>...) group.
    query = create(personas, body_regex="(?P<word>declined)")

    ran = lake_query_run(query_id=query.id, spark=spark)

    assert ran.status == LakeQuery.FAILED
    assert ran.error == (
        "body_regex: Spark refuses this regular expression: Unknown inline modifier near index 2"
    )
    assert (ran.result_path, ran.matched, ran.progress) == ("", 0, 0)
    assert results_dirs(lake_root) == []
    finished = AuditEntry.objects.get(action="lake_query.finished")
    assert finished.details == {"status": "failed", "error": ran.error}


def test_a_cancelled_query_never_runs(lake_ready, personas):
    query = create(personas, queues=["orders"])
    lake_query_cancel(actor=personas["operator"], query=query)

    assert lake_query_run(query_id=query.id) is None
    assert LakeQuery.objects.get(id=query.id).status == LakeQuery.CANCELLED


def test_a_query_cancelled_while_it_runs_keeps_no_result(
    lake_ready, personas, monkeypatch, lake_root
):
    query = create(personas, queues=["orders"])

    def job(spark, params):
        # The person cancels while Spark works; Spark happens to finish anyway.
        lake_query_cancel(actor=personas["operator"], query=LakeQuery.objects.get(id=query.id))
        Path(params.out_dir).mkdir(parents=True)
        return SimpleNamespace(scanned=5, matched=3)

    monkeypatch.setattr("workers.jobs.lake_query.run_lake_query", job)
    ran = lake_query_run(query_id=query.id, spark=no_spark())

    assert (ran.status, ran.result_path, ran.matched) == (LakeQuery.CANCELLED, "", 0)
    assert results_dirs(lake_root) == []
    assert list(AuditEntry.objects.values_list("action", flat=True)) == [
        "lake_query.created",
        "lake_query.cancelled",
    ]


def test_a_running_query_whose_heartbeat_stopped_is_taken_over(
    lake_ready, personas, monkeypatch, settings
):
    query = create(personas, queues=["orders"])
    stale = timezone.now() - timedelta(seconds=3 * settings.HEARTBEAT_SECONDS + 1)
    LakeQuery.objects.filter(id=query.id).update(
        status=LakeQuery.RUNNING, worker="dead:1:x", heartbeat_at=stale, attempts=1
    )

    def job(spark, params):
        Path(params.out_dir).mkdir(parents=True)
        return SimpleNamespace(scanned=5, matched=0)

    monkeypatch.setattr("workers.jobs.lake_query.run_lake_query", job)
    ran = lake_query_run(query_id=query.id, spark=no_spark())

    assert (ran.status, ran.attempts) == (LakeQuery.DONE, 2)
    assert ran.worker != "dead:1:x"


def test_a_running_query_with_a_live_heartbeat_is_left_to_its_worker(lake_ready, personas):
    query = create(personas, queues=["orders"])
    LakeQuery.objects.filter(id=query.id).update(
        status=LakeQuery.RUNNING, worker="alive:1:x", heartbeat_at=timezone.now(), attempts=1
    )

    assert lake_query_run(query_id=query.id) is None
    assert LakeQuery.objects.get(id=query.id).worker == "alive:1:x"


def test_an_unexpected_error_is_recorded_without_its_stack(lake_ready, personas, monkeypatch):
    query = create(personas, queues=["orders"])

    def job(spark, params):
        raise OSError("No space left on device\n  at a.b.c(Native Method)")

    monkeypatch.setattr("workers.jobs.lake_query.run_lake_query", job)
    ran = lake_query_run(query_id=query.id, spark=no_spark())

    assert (ran.status, ran.error) == (LakeQuery.FAILED, "OSError: No space left on device")


def test_only_the_requester_or_someone_who_may_stop_any_query_cancels_it(lake_ready, personas):
    from django.core.exceptions import PermissionDenied, ValidationError

    query = create(personas, queues=["orders"])
    with pytest.raises(PermissionDenied):
        lake_query_cancel(actor=personas["approver"], query=query)

    assert lake_query_cancel(actor=personas["admin"], query=query).status == LakeQuery.CANCELLED
    with pytest.raises(ValidationError, match="has finished already \\(cancelled\\)"):
        lake_query_cancel(actor=personas["operator"], query=query)


# --- Progress ------------------------------------------------------------------------------------


class FakeTracker:
    """Spark's status tracker, as jobs of a group look in it."""

    def __init__(self, jobs):
        # jobs: {job_id: (status, [(tasks, completed), ...])}
        self.jobs = jobs
        self.stages = {}
        for job_id, (_, stages) in jobs.items():
            for n, (tasks, completed) in enumerate(stages):
                self.stages[job_id * 10 + n] = (tasks, completed)

    def getJobIdsForGroup(self, group):
        return list(self.jobs) if group == "g" else []

    def getJobInfo(self, job_id):
        status, stages = self.jobs[job_id]
        ids = [job_id * 10 + n for n in range(len(stages))]
        return SimpleNamespace(jobId=job_id, stageIds=ids, status=status)

    def getStageInfo(self, stage_id):
        tasks, completed = self.stages[stage_id]
        return SimpleNamespace(numTasks=tasks, numCompletedTasks=completed)


class FakeContext(SimpleNamespace):
    """A SparkContext, as a job group uses it: the thread's properties, its status tracker."""

    def setJobGroup(self, group, description, interruptOnCancel=False):
        self.group = group

    def setLocalProperty(self, key, value):
        pass


def test_progress_is_completed_tasks_over_all_tasks_of_the_groups_jobs():
    tracker = FakeTracker(
        {
            # A job that succeeded counts whole, its skipped stage (0 of 4 run) too.
            1: ("SUCCEEDED", [(2, 2), (4, 0)]),
            2: ("RUNNING", [(10, 3), (4, 0)]),
        }
    )

    assert job_group_progress(tracker, "g") == 100 * (2 + 4 + 3) // (2 + 4 + 10 + 4)
    assert job_group_progress(tracker, "another") is None


def test_the_heartbeat_writes_progress_and_cancels_spark_when_the_query_is_cancelled(
    lake_ready, personas, monkeypatch
):
    monkeypatch.setattr(execution, "PROGRESS_SECONDS", 0.05)
    query = create(personas, queues=["orders"])
    LakeQuery.objects.filter(id=query.id).update(
        status=LakeQuery.RUNNING, worker="me", heartbeat_at=timezone.now()
    )
    cancelled = []
    context = FakeContext(
        statusTracker=lambda: FakeTracker({1: ("RUNNING", [(4, 1)])}),
        cancelJobGroup=cancelled.append,
    )
    heartbeat = QueryHeartbeat(query.id, "me", JobGroup(context, "g", "lake query"))
    heartbeat.start()
    try:
        _wait_for(lambda: LakeQuery.objects.get(id=query.id).progress == 25)
        lake_query_cancel(actor=personas["operator"], query=query)
        # Sent again at every beat until the run ends: a job started since is cancelled too.
        _wait_for(lambda: cancelled[:2] == ["g", "g"])
    finally:
        heartbeat.stop()
    assert not heartbeat.is_alive()


def test_progress_never_goes_back_and_stays_under_100_until_done():
    context = FakeContext(statusTracker=None)
    heartbeat = QueryHeartbeat(1, "me", JobGroup(context, "g", "lake query"))
    readings = iter(
        [
            FakeTracker({1: ("RUNNING", [(4, 2)])}),  # 50
            FakeTracker({1: ("SUCCEEDED", [(4, 4)]), 2: ("RUNNING", [(12, 0)])}),  # 25
            FakeTracker({1: ("SUCCEEDED", [(4, 4)]), 2: ("SUCCEEDED", [(12, 12)])}),  # 100
        ]
    )
    context.statusTracker = lambda: next(readings)

    assert [heartbeat._progress() for _ in range(3)] == [50, 50, 99]


class FakeConnectSession:
    """A Spark Connect session, as tagged jobs use it: tags, progress handlers (called in the
    thread that runs the operation, with keywords, as pyspark's client calls them), and
    interruptTag. tests/processes/test_spark_connect.py runs the real one."""

    def __init__(self):
        self.tags, self.handlers, self.interrupted = set(), [], []

    def addTag(self, tag):
        self.tags.add(tag)

    def removeTag(self, tag):
        self.tags.discard(tag)

    def registerProgressHandler(self, handler):
        self.handlers.append(handler)

    def removeProgressHandler(self, handler):
        self.handlers.remove(handler)

    def interruptTag(self, tag):
        self.interrupted.append(tag)

    def report(self, operation, stages, *, done=False):
        from pyspark.sql.connect.shell.progress import StageInfo

        infos = [
            StageInfo(stage_id=n, num_tasks=t, num_completed_tasks=c, num_bytes_read=0, done=False)
            for n, (t, c) in enumerate(stages)
        ]
        for handler in list(self.handlers):
            handler(stages=infos, inflight_tasks=0, operation_id=operation, done=done)


def test_over_spark_connect_progress_counts_this_threads_operations_an_ended_one_whole():
    import threading

    session = FakeConnectSession()
    jobs = ConnectJobs(session, "lake-query-1")
    assert jobs.progress() is None  # no report yet
    session.report("op-1", [(4, 1)])
    assert jobs.progress() == 25
    # Another thread's operation on the same session is not this query's.
    other = threading.Thread(target=session.report, args=("op-x", [(100, 0)]))
    other.start()
    other.join()
    assert jobs.progress() == 25
    # The first operation ended (its second stage skipped, never run); a second one started.
    session.report("op-1", [(4, 4), (4, 0)], done=True)
    session.report("op-2", [(12, 3)])
    assert jobs.progress() == 100 * (8 + 3) // (8 + 12)


def test_over_spark_connect_a_cancel_interrupts_the_tag_and_close_leaves_nothing_behind():
    session = FakeConnectSession()
    jobs = ConnectJobs(session, "lake-query-2")
    assert session.tags == {"lake-query-2"} and len(session.handlers) == 1
    jobs.cancel()
    assert session.interrupted == ["lake-query-2"]
    jobs.close()
    assert (session.tags, session.handlers) == (set(), [])


def _wait_for(condition, timeout=10):
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
