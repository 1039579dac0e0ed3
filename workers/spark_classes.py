"""A class-data sharing archive of the classes a Spark job loads, for JVMs that start often.

Most of a small Spark job's CPU on a short-lived worker goes to starting its JVM: reading,
checking and linking some ten thousand classes from Spark's jars. The JVM can map them from an
archive it wrote on an earlier run instead (JDK 13+, `-XX:ArchiveClassesAtExit` to write it,
`-XX:SharedArchiveFile` to use it): measured on two cores, a session's start and first jobs
took 9-11 s of CPU instead of 14-15 s. `make test` builds one and adds it to the JVM options of
the tests and of the workers they start; a JVM that cannot use it (another JDK, other jars)
starts as before.

    python -m workers.spark_classes var/spark-classes.jsa

runs the kinds of work the jobs do (Arrow in and out, Parquet written and read with a filter, a
join, a window, a group, a Python function over Arrow batches) in a JVM that writes the archive
as it ends. The archive is written beside its path, then moved into place, so two builds at
once (CI's two suites) never leave half a file.
"""

import os
import sys
import tempfile
from pathlib import Path

from workers.spark import spark_session, spark_shutdown

# The options of the JVMs that will use it (Makefile), which the archive is written with.
FAST_START = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# A JVM that cannot map the archive says so on its output; the start goes on without it.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def _typical_work(spark, folder):
    import pyarrow as pa
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    table = pa.table(
        {
            "message_id": [f"m-{n}" for n in range(200)],
            "queue": ["orders", "payments"] * 100,
            "body": [b"{}"] * 200,
            "delivery_count": list(range(200)),
        }
    )
    frame = spark.createDataFrame(table.to_pandas())
    frame.write.mode("overwrite").partitionBy("queue").parquet(f"{folder}/messages")
    read = spark.read.parquet(f"{folder}/messages").where(F.col("delivery_count") > 3)
    latest = Window.partitionBy("queue").orderBy(F.col("delivery_count").desc())
    ranked = read.withColumn("rank", F.row_number().over(latest)).where("rank = 1")
    counts = read.groupBy("queue").agg(F.count("*").alias("n"), F.max("delivery_count"))
    joined = ranked.join(counts, "queue", "left")

    def doubled(batches):
        for batch in batches:
            yield batch.set_column(
                batch.schema.get_field_index("delivery_count"),
                "delivery_count",
                pa.compute.multiply(batch.column("delivery_count"), 2),
            )

    joined.mapInArrow(doubled, joined.schema).toArrow()
    joined.write.mode("overwrite").parquet(f"{folder}/joined")
    spark.read.parquet(f"{folder}/joined").collect()


def archive_build(path):
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    with tempfile.TemporaryDirectory() as folder:
        spark = spark_session(
            master="local[2]",
            app_name="antidote-class-archive",
            java_options=f"{FAST_START} -XX:ArchiveClassesAtExit={partial} {QUIET}",
        )
        try:
            _typical_work(spark, folder)
        finally:
            # The JVM writes the archive as it exits, which this waits for.
            spark_shutdown(timeout=300)
    if not partial.is_file():
        raise SystemExit(f"the JVM wrote no class archive at {partial}")
    os.replace(partial, path)
    return path


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m workers.spark_classes ARCHIVE")
    print(f"Spark's class archive: {archive_build(sys.argv[1])}")
