"""Current state from the ledger: the latest event of each message, by (epoch, step).

Pure transforms over DataFrames plus `extract_*` readers that take paths; no Django here."""

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from workers.engine import states as S
from workers.lake.schema import EVENT_SCHEMA, MESSAGE_SCHEMA, spark_schema

EVENT_COLUMNS = [f.name for f in EVENT_SCHEMA]
# A committed directory, as the lake names it (workers.lake.store.Lake.new_dir): the last three
# folders of a file's path. The refresh finds a body's directory the same way.
COMMIT_DIR = r"([^/]+/[^/]+/[^/]+)/[^/]+$"
# The column `tagged` adds: the id of the commit a row was read from.
COMMIT_ID = "commit_id"


def _read(spark: SparkSession, paths, arrow_schema) -> DataFrame:
    schema = spark_schema(arrow_schema)
    if not paths:
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).parquet(*paths)


def extract_events(spark, paths) -> DataFrame:
    return _read(spark, paths, EVENT_SCHEMA)


def extract_messages(spark, paths) -> DataFrame:
    return _read(spark, paths, MESSAGE_SCHEMA)


def fold_state(events: DataFrame, *, carry=()) -> DataFrame:
    """Latest event per message. The state snapshot has the events' columns, so snapshots and
    newer events fold together the same way. `carry`: columns that are the same on every row of
    a message (joined on by id), kept alongside."""
    latest = events.groupBy("message_id", *carry).agg(
        F.max_by(F.struct(*EVENT_COLUMNS), F.struct("epoch", "step")).alias("e")
    )
    return latest.select("e.*", *carry)


def extract_state(spark, snapshot_paths, event_paths) -> DataFrame:
    return fold_state(extract_events(spark, [*snapshot_paths, *event_paths]))


def open_state(state: DataFrame) -> DataFrame:
    """The rows of the messages that are not final: an open snapshot's (workers.lake.schema)."""
    return state.where(~F.col("to_state").isin(sorted(S.FINAL_STATES)))


def tagged(rows: DataFrame, commits: DataFrame) -> DataFrame:
    """Rows read from committed directories, each with its commit's id (`commits`: the id
    column, relpath). Files of a directory no commit names are dropped."""
    relpath = F.regexp_extract(F.col("_metadata.file_path"), COMMIT_DIR, 1)
    return rows.withColumn("relpath", relpath).join(F.broadcast(commits), "relpath").drop("relpath")


def read_tagged(spark, lake_root, commits, arrow_schema, *, column=COMMIT_ID) -> DataFrame:
    """The rows of committed directories (`commits`: [(commit id, path relative to lake_root)]),
    each with its commit's id in `column`."""
    paths = [str(Path(lake_root) / p) for _, p in commits]
    rows = spark.read.schema(spark_schema(arrow_schema)).parquet(*paths)
    ids = spark.createDataFrame([(int(i), p) for i, p in commits], f"{column} long, relpath string")
    return tagged(rows, ids)
