"""The Spark session factory: one long-lived session per process.

Local mode by default; a standalone cluster with SPARK_MASTER=spark://host:7077; Spark Connect with
SPARK_REMOTE=sc://host:15002. Executors run this interpreter (PYSPARK_PYTHON), so handlers import
exactly what the worker imports."""

import os
import sys
import threading

_lock = threading.Lock()
_session = None


def spark_session(
    *, master="local[*]", remote="", app_name="antidote", driver_memory="2g", extra_conf=None
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
        conf.update(extra_conf or {})
        if remote:
            conf = {k: v for k, v in conf.items() if k.startswith("spark.sql.")}
        for key, value in conf.items():
            builder = builder.config(key, value)
        _session = builder.getOrCreate()
        if not remote:
            _session.sparkContext.setLogLevel("ERROR")
        return _session


def spark_stop():
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None
