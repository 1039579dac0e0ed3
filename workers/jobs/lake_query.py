"""A lake query as a Spark job: every message of the lake, not only the indexed ones, searched by
metadata and by body.

extract: the current state (the newest state snapshot and the events commits after it, folded by
  workers.jobs.state.fold_state), the messages dataset without its bodies, and later the bodies of
  the candidates only.
transform: metadata filters first, on narrow columns (`state_filter`, `metadata_candidates`), so
  the body column is read only from the files that hold a candidate's current body version; then
  the body filters (`body_filter`) and the result's columns (`result_rows`).
load: Parquet in a new directory, sorted by message_id so the console pages it by keyset.

Bodies are bytes. The text criteria (contains, regular expression, JSON path) see a body decoded
as UTF-8; a body that is not valid UTF-8 (a binary one) matches none of them. A regular
expression is Java's (Spark's rlike), matched anywhere in the body (find, not a whole match).

No Django here: the task passes paths and criteria (console.lakequery.execution).
"""

import json
import re
import sys
from dataclasses import asdict, dataclass, field
from datetime import datetime

import pyarrow.dataset as pads
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import MapType, StringType

from workers.jobs.state import extract_messages, extract_state
from workers.spark import is_connect


class QueryRefused(ValueError):
    """Spark refuses a criterion (a regular expression Java does not accept, say); the message
    says which and why, for the person who asked."""


@dataclass(frozen=True)
class Criteria:
    """What a query looks for; every criterion that is set must hold. Checked by the console
    before it gets here (console.lakequery.criteria.lake_query_criteria_clean)."""

    queues: tuple = ()  # current queue, one of
    states: tuple = ()  # current state, one of
    sender: str | None = None
    conversation_id: str | None = None
    message_id_prefix: str | None = None
    enqueued_from: datetime | None = None  # enqueued_at >= this
    enqueued_to: datetime | None = None  # enqueued_at < this
    body_contains: str | None = None
    body_regex: str | None = None
    json_path: str | None = None  # with json_equals: get_json_object(body, path) == json_equals
    json_equals: str | None = None
    header_name: str | None = None  # the header exists ...
    header_value: str | None = None  # ... and its value contains this

    @property
    def reads_body(self):
        return any(v is not None for v in (self.body_contains, self.body_regex, self.json_path))


@dataclass
class LakeQueryParams:
    criteria: Criteria
    snapshot_paths: list  # the newest state snapshot (zero or one directory)
    event_paths: list  # the events commits after it
    message_paths: list  # every committed messages directory
    out_dir: str  # the result's directory: must not exist yet


@dataclass
class LakeQueryResult:
    scanned: int = 0
    matched: int = 0
    body_dirs: list = field(default_factory=list)  # the messages directories bodies were read from


# --- Transforms ----------------------------------------------------------------------------------


def current_state(state: DataFrame) -> DataFrame:
    """The narrow columns of the folded state that a query filters on and returns."""
    return state.select(
        "message_id",
        "queue",
        F.col("to_state").alias("state"),
        F.coalesce("delivery_count", F.lit(0)).alias("delivery_count"),
        F.coalesce("body_version", F.lit(1)).alias("body_version"),
        "reason",
        F.col("at").alias("updated"),
    )


def state_filter(state: DataFrame, criteria: Criteria) -> DataFrame:
    """The criteria on the current state: queue, state, id prefix."""
    if criteria.queues:
        state = state.where(F.col("queue").isin(list(criteria.queues)))
    if criteria.states:
        state = state.where(F.col("state").isin(list(criteria.states)))
    if criteria.message_id_prefix:
        state = state.where(F.col("message_id").startswith(criteria.message_id_prefix))
    return state


def with_dir(messages: DataFrame) -> DataFrame:
    """Each message row with the lake directory it was read from, as its last three folders:
    Lake.new_dir names every directory dataset/day/name, and nothing there needs URL-decoding
    (workers.jobs.refresh.with_body_path does the same)."""
    return messages.withColumn(
        "dir", F.regexp_extract(F.col("_metadata.file_path"), r"([^/]+/[^/]+/[^/]+)/[^/]+$", 1)
    )


def lake_dir(path):
    """The last three folders of a directory's path, as `with_dir` names it."""
    return "/".join(str(path).rstrip("/").split("/")[-3:])


def metadata_candidates(state: DataFrame, messages: DataFrame, criteria: Criteria) -> DataFrame:
    """The messages whose metadata match, each with its current body version's size and
    directory. `state` is `current_state`'s; `messages` has the messages dataset's columns but
    `body` (and `dir`, see `with_dir`). Sender, conversation and enqueue time are the message's as
    received (version 1), as the console's index shows them."""
    state = state_filter(state, criteria)
    originals = messages.where(F.col("version") == 1).select(
        "message_id", "sender", "conversation_id", "enqueued_at"
    )
    if criteria.sender is not None:
        originals = originals.where(F.col("sender") == criteria.sender)
    if criteria.conversation_id is not None:
        originals = originals.where(F.col("conversation_id") == criteria.conversation_id)
    if criteria.enqueued_from is not None:
        originals = originals.where(F.col("enqueued_at") >= F.lit(criteria.enqueued_from))
    if criteria.enqueued_to is not None:
        originals = originals.where(F.col("enqueued_at") < F.lit(criteria.enqueued_to))
    original_filtered = any(
        v is not None
        for v in (
            criteria.sender,
            criteria.conversation_id,
            criteria.enqueued_from,
            criteria.enqueued_to,
        )
    )
    # A message whose original row is missing still counts, unless a criterion needs that row.
    rows = state.join(originals, on="message_id", how="inner" if original_filtered else "left")

    current = messages.select(
        "message_id",
        F.col("version").alias("body_version"),
        "body_size",
        "headers",
        F.col("dir") if "dir" in messages.columns else F.lit(None).cast("string").alias("dir"),
    )
    rows = rows.join(current, on=["message_id", "body_version"], how="left")
    if criteria.header_name is not None:
        # try_element_at: a missing key is null, not an error (ANSI mode).
        value = F.try_element_at(
            F.from_json("headers", MapType(StringType(), StringType())),
            F.lit(criteria.header_name),
        )
        matched = value.isNotNull()
        if criteria.header_value:
            matched = matched & value.contains(criteria.header_value)
        rows = rows.where(matched)
    return rows.drop("headers")


def body_text(body):
    """The body as text when it is valid UTF-8, else null (a binary body matches no text)."""
    text = body.cast("string")
    return F.when(F.is_valid_utf8(text), text)


def body_filter(candidates: DataFrame, bodies: DataFrame, criteria: Criteria) -> DataFrame:
    """The candidates whose current body matches the body criteria. `bodies` has message_id,
    version and body."""
    current = bodies.select(
        "message_id", F.col("version").alias("body_version"), body_text(F.col("body")).alias("text")
    )
    rows = candidates.join(current, on=["message_id", "body_version"], how="inner")
    text = F.col("text")
    if criteria.body_contains is not None:
        rows = rows.where(text.contains(criteria.body_contains))
    if criteria.body_regex is not None:
        rows = rows.where(text.rlike(criteria.body_regex))
    if criteria.json_path is not None:
        rows = rows.where(F.get_json_object(text, criteria.json_path) == criteria.json_equals)
    return rows.drop("text")


def result_rows(rows: DataFrame) -> DataFrame:
    """The result's columns (workers.lake.schema.QUERY_RESULT_COLUMNS: the console reads them
    by name), sorted by message_id."""
    return rows.select(
        "message_id",
        "queue",
        "state",
        F.col("delivery_count").cast("int").alias("delivery_count"),
        "sender",
        "conversation_id",
        "enqueued_at",
        F.coalesce("body_size", F.lit(0)).cast("long").alias("body_size"),
        "reason",
        "updated",
    ).orderBy("message_id")


# --- The job -------------------------------------------------------------------------------------


def regex_check(spark, pattern):
    """QueryRefused if Java's regular expressions refuse the pattern. Checked on a literal
    before the scan: a filter that no row reaches would never tell."""
    try:
        spark.range(1).select(F.lit("").rlike(pattern)).collect()  # one row
    except Exception as exc:
        if "PATTERN" not in str(exc):
            raise
        reason = _java_regex_reason(spark, pattern, exc) or spark_message(exc)
        raise QueryRefused(f"body_regex: Spark refuses this regular expression: {reason}") from exc


def _java_regex_reason(spark, pattern, refused):
    """Java's own words on a pattern it refuses ("Unknown inline modifier near index 2"): from
    the JVM at hand in a classic session; over Spark Connect, from the causes the server sends
    with its error (the client has them as the server's stack trace)."""
    if is_connect(spark):
        trace = refused.getStackTrace() if hasattr(refused, "getStackTrace") else None
        found = re.search(r"PatternSyntaxException: (.+)", trace or "")
        return found.group(1).strip() if found else None
    try:
        jvm = spark.sparkContext._jvm
    except Exception:
        return None
    try:
        jvm.java.util.regex.Pattern.compile(pattern)
    except Exception as exc:
        return spark_message(exc)
    return None


def spark_message(exc):
    """The readable part of a Spark error: its first line, no JVM stack trace."""
    return str(exc).strip().split("\n", 1)[0][:1000]


def run_lake_query(spark, params: LakeQueryParams) -> LakeQueryResult:
    criteria = params.criteria
    if criteria.body_regex is not None:
        regex_check(spark, criteria.body_regex)
    result = LakeQueryResult()
    state = current_state(extract_state(spark, params.snapshot_paths, params.event_paths))
    state = state.persist(StorageLevel.MEMORY_AND_DISK)
    held = [state]
    try:
        result.scanned = state.count()
        messages = extract_messages(spark, params.message_paths).drop("body")
        if params.message_paths:
            messages = with_dir(messages)
        rows = metadata_candidates(state, messages, criteria)
        if criteria.reads_body:
            rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
            held.append(rows)
            # Bodies are read only from the directories that hold a candidate's current body:
            # the driver gets one row per directory of the lake, never one per message.
            dirs = {r.dir for r in rows.select("dir").distinct().collect() if r.dir}
            result.body_dirs = [p for p in params.message_paths if lake_dir(p) in dirs]
            bodies = extract_messages(spark, result.body_dirs)
            rows = body_filter(rows, bodies, criteria)
        result_rows(rows).write.parquet(params.out_dir)
    finally:
        for frame in held:
            frame.unpersist()
    result.matched = result_count(params.out_dir)
    return result


def result_count(path):
    dataset = pads.dataset(path, format="parquet")
    return dataset.count_rows() if dataset.files else 0


# --- spark-submit --------------------------------------------------------------------------------


def params_from_json(data):
    criteria = dict(data["criteria"])
    for name in ("enqueued_from", "enqueued_to"):
        if criteria.get(name):
            criteria[name] = datetime.fromisoformat(criteria[name])
    for name in ("queues", "states"):
        criteria[name] = tuple(criteria.get(name) or ())
    return LakeQueryParams(**{**data, "criteria": Criteria(**criteria)})


def main(argv):
    """spark-submit workers/jobs/lake_query.py params.json: the params as JSON (criteria, paths
    and out_dir); prints the counts as JSON."""
    from workers.spark import spark_session

    with open(argv[1]) as f:
        params = params_from_json(json.load(f))
    result = run_lake_query(spark_session(), params)
    print(json.dumps(asdict(result)))


if __name__ == "__main__":
    main(sys.argv)
