"""The Spark session factory: one long-lived session per process, and what differs between its
two kinds.

Local mode by default; a standalone cluster with SPARK_MASTER=spark://host:7077; Spark Connect with
SPARK_REMOTE=sc://host:15002. Executors run this interpreter (PYSPARK_PYTHON), so handlers import
exactly what the worker imports. A Spark Connect server runs the Python workers itself: it must be
started with the project on its PYTHONPATH and this interpreter as its PYSPARK_PYTHON
(docs/guides/spark-connect.md).

Over Spark Connect the process has no JVM and no SparkContext: `is_connect` tells the jobs which
kind they have, `default_parallelism` stands in for `sparkContext.defaultParallelism`, and
`tracked_jobs` gives a piece of work progress and cancellation with the job group and status
tracker of a classic session, or the operation tags and progress reports of a Connect one.

The JVM of a classic session belongs to this process, which stops it (`spark_shutdown`): it is
started with SIGTERM ignored, as pyspark already starts it with SIGINT ignored. A supervisor
(honcho, systemd) signals the whole process group; a JVM that took that signal ran its own
shutdown under the jobs still running here, and the driver's accumulator thread printed an
EOFError traceback as it lost its connection. It still ends when this process dies (its stdin
closes) and with a SIGKILL of the group.
"""

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading

log = logging.getLogger(__name__)

_lock = threading.Lock()
_session = None


def spark_session(
    *,
    master="local[*]",
    remote="",
    app_name="antidote",
    driver_memory="2g",
    java_options="",
    extra_conf=None,
):
    global _session
    with _lock:
        if _session is not None:
            return _session
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        # Executors import handlers by dotted path: they need the project on their path.
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if root not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName(app_name)
        builder = builder.remote(remote) if remote else builder.master(master)
        conf = {
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.shuffle.partitions": str(max(2, os.cpu_count() or 2)),
            "spark.sql.adaptive.enabled": "true",
            "spark.sql.execution.arrow.pyspark.enabled": "true",
            "spark.sql.parquet.compression.codec": "zstd",
            "spark.driver.memory": driver_memory,
            "spark.executorEnv.PYTHONPATH": os.environ["PYTHONPATH"],
            "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
            # Our handlers fork a child per isolation batch; a crash must not be retried by Spark
            # behind our back (R7/R8 count crashes themselves).
            "spark.task.maxFailures": "1",
        }
        if java_options:
            conf["spark.driver.extraJavaOptions"] = java_options
        conf.update(extra_conf or {})
        if remote:
            conf = {k: v for k, v in conf.items() if k.startswith("spark.sql.")}
        for key, value in conf.items():
            builder = builder.config(key, value)
        if remote:
            _session = builder.getOrCreate()
            _server_check(_session, remote)
        else:
            with _jvm_ignores_sigterm():
                _session = builder.getOrCreate()
            _session.sparkContext.setLogLevel("ERROR")
            _accumulator_eof_quiet(_session.sparkContext)
        return _session


def spark_session_from(settings):
    """The session as `settings` say (Django's, or any object with SPARK_MASTER, SPARK_REMOTE,
    SPARK_DRIVER_MEMORY and SPARK_DRIVER_JAVA_OPTIONS): one place for the worker's tasks and its
    start alike."""
    return spark_session(
        master=settings.SPARK_MASTER,
        remote=settings.SPARK_REMOTE,
        driver_memory=settings.SPARK_DRIVER_MEMORY,
        java_options=settings.SPARK_DRIVER_JAVA_OPTIONS,
    )


@contextlib.contextmanager
def _jvm_ignores_sigterm():
    """Launch the JVM with SIGTERM ignored: a signal ignored at its start is one the JVM leaves
    alone (as `nohup` relies on for SIGHUP). pyspark gives its Popen a preexec_fn of its own
    (SIGINT ignored), which this one calls first; it runs in the child, before exec."""
    from pyspark import java_gateway

    popen = java_gateway.Popen

    def launch(*args, preexec_fn=None, **kwargs):
        def preexec():
            if preexec_fn is not None:
                preexec_fn()
            signal.signal(signal.SIGTERM, signal.SIG_IGN)

        return popen(*args, preexec_fn=preexec, **kwargs)

    java_gateway.Popen = launch
    try:
        yield
    finally:
        java_gateway.Popen = popen


def _accumulator_eof_quiet(context):
    """A JVM that goes away first (killed, or out of memory) closes the connection of the
    driver's accumulator server, whose thread then prints an EOFError traceback (socketserver's
    handle_error). That is the JVM's end, not an error of this process: one line says so."""
    server = getattr(context, "_accumulatorServer", None)
    if server is None:
        return
    default = server.handle_error

    def handle_error(request, client_address):
        if isinstance(sys.exc_info()[1], EOFError):
            log.warning("the Spark JVM closed its accumulator connection: it has stopped")
            return
        default(request, client_address)

    server.handle_error = handle_error


def _server_check(spark, remote):
    """A Spark Connect server takes only spark.sql.* from its clients: what else the engine
    needs is the server's own configuration. Say so loudly when a task may be retried there."""
    master = spark.conf.get("spark.master", None) or ""
    # local[N] tries a task once; local[N,F] and clusters F times (spark.task.maxFailures).
    retries = "," in master if master.startswith("local") else True
    if retries and spark.conf.get("spark.task.maxFailures", None) != "1":
        log.warning(
            "the Spark Connect server %s (master %s) may retry a failed task: start it with "
            "--conf spark.task.maxFailures=1, or a handler's crash runs its batch again behind "
            "the engine's back (R7, R8)",
            remote,
            master,
        )


def spark_stop():
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None


def spark_shutdown(*, timeout=10.0):
    """At the process's end: stop the session, then end its JVM now (it ignores SIGTERM, and
    would otherwise wait for this process to exit and close its stdin). A Spark Connect session
    has no JVM here. Returns the JVM's exit code, or None when there was none to end."""
    if "pyspark" not in sys.modules:
        return None  # no session was ever started here
    from pyspark import SparkContext

    spark_stop()
    with _lock:
        gateway = SparkContext._gateway
        proc = getattr(gateway, "proc", None)
        if proc is None:
            return None
        # pyspark's own end of its gateway: the JVM exits when its stdin closes.
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        SparkContext._gateway = None
        SparkContext._jvm = None
        return code


def is_connect(spark):
    """True for a Spark Connect session (pyspark.sql.connect): no SparkContext, no JVM here."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def default_parallelism(spark):
    """The cluster's default number of partitions: `sparkContext.defaultParallelism` in a
    classic session. Over Spark Connect, the number of partitions the server splits a range
    into when not told (that is its defaultParallelism too), found with one small job."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    from pyspark.sql import functions as F

    row = spark.range(0, 1 << 16).select(F.spark_partition_id().alias("p")).agg(F.max("p")).first()
    return row[0] + 1


def tracked_jobs(spark, tag, description):
    """The Spark jobs this thread starts until `close()`, tagged so that another thread can
    read their progress (`progress()`: 0 to 100, None before the first reading) and cancel
    them (`cancel()`). `tag` must be unique to the piece of work and hold no comma."""
    if is_connect(spark):
        return ConnectJobs(spark, tag)
    return JobGroup(spark.sparkContext, tag, description)


class JobGroup:
    """A classic session's job group (the thread's local properties): progress from Spark's
    status tracker, cancellation with cancelJobGroup."""

    def __init__(self, context, group, description):
        self.context = context
        self.group = group
        context.setJobGroup(group, description, interruptOnCancel=True)

    def progress(self):
        return job_group_progress(self.context.statusTracker(), self.group)

    def cancel(self):
        self.context.cancelJobGroup(self.group)

    def close(self):
        for key in ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel"):
            self.context.setLocalProperty(key, None)


def job_group_progress(tracker, group):
    """Completed tasks over all tasks of the group's jobs so far, 0 to 100; None before its
    first job. A job that succeeded counts whole (its skipped stages never run)."""
    done = total = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        if job is None:
            continue
        for stage_id in job.stageIds:
            stage = tracker.getStageInfo(stage_id)
            if stage is None:
                continue
            total += stage.numTasks
            done += stage.numTasks if job.status == "SUCCEEDED" else stage.numCompletedTasks
    if total == 0:
        return None
    return 100 * done // total


class ConnectJobs:
    """A Spark Connect session's operations started by this thread, tagged (the client's tags
    are per thread): cancellation with interruptTag, progress from the progress reports the
    server sends with each operation's results (every `spark.connect.progress.reportInterval`,
    2 s by default, and when it ends). A session's progress handlers hear every thread's
    operations, and are called in the thread that runs the operation: this one keeps only its
    own thread's."""

    def __init__(self, spark, tag):
        self.spark = spark
        self.tag = tag
        self.thread = threading.get_ident()
        self._lock = threading.Lock()
        self._operations = {}  # operation id -> ({stage id: (tasks, completed)}, ended)
        spark.addTag(tag)
        spark.registerProgressHandler(self._on_progress)

    def _on_progress(self, stages, inflight_tasks, operation_id=None, done=False, **_):
        if threading.get_ident() != self.thread:
            return
        with self._lock:
            known, _ = self._operations.get(operation_id, ({}, False))
            for stage in stages or ():
                known[stage.stage_id] = (stage.num_tasks, stage.num_completed_tasks)
            self._operations[operation_id] = (known, done)

    def progress(self):
        """Completed tasks over all tasks of the operations' stages so far, 0 to 100; None
        before the first report. An operation that ended counts whole (its skipped stages never
        run), as a succeeded job does in `job_group_progress`."""
        done = total = 0
        with self._lock:
            for stages, ended in self._operations.values():
                for tasks, completed in stages.values():
                    total += tasks
                    done += tasks if ended else completed
        if total == 0:
            return None
        return 100 * done // total

    def cancel(self):
        self.spark.interruptTag(self.tag)

    def close(self):
        self.spark.removeProgressHandler(self._on_progress)
        self.spark.removeTag(self.tag)
