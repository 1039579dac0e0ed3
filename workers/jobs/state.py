"""Current state from the ledger: the latest event of each message, by (epoch, step).

Pure transforms over DataFrames plus `extract_*` readers that take paths; no Django here."""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from workers.lake.schema import EVENT_SCHEMA, MESSAGE_SCHEMA, spark_schema

EVENT_COLUMNS = [f.name for f in EVENT_SCHEMA]


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
