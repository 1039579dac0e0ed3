"""Column layouts of the lake's datasets, declared once for pyarrow and for Spark.

- messages: immutable bodies and metadata, one row per (message_id, version). Version 1 is the
  body as received; an administrator's edit adds a new version, the original is kept (R13).
- events: the append-only ledger. Each row is one transition and carries the message's whole
  state after it, so the current state is the latest event per message by (epoch, step).
- state: compacted current state: exactly the latest event per message.
- open: the state snapshot's rows of the messages that are not final (FINAL_STATES), with the same
  coverage: what a delivery run folds to find the due messages. A final message gets no event but
  a purge's (R15), so one that is in neither this nor the events commits after it is final.
- history: the events again, compacted and keyed by message (workers.lake.history): each commit
  is a generation, the events of a run of events commits spread over bucket files by a hash of
  the message id and sorted by it, so that one message's history is a few small reads.
- notifications: error notifications sent to senders (R6, R13).
- lake query results: the rows a lake query found, one per message (QUERY_RESULT_COLUMNS).
"""

import pyarrow as pa

TS = pa.timestamp("us", tz="UTC")

MESSAGE_SCHEMA = pa.schema(
    [
        ("message_id", pa.string()),
        ("version", pa.int32()),
        ("queue", pa.string()),
        ("body", pa.binary()),
        ("body_sha256", pa.string()),
        ("body_size", pa.int64()),
        ("content_type", pa.string()),
        ("headers", pa.string()),  # a JSON object, as text
        ("conversation_id", pa.string()),
        ("sender", pa.string()),
        ("enqueued_at", TS),
        # A reprocess's own target, as JSON text (console.decisions.targets): set only on the
        # version the request that names it writes, so nothing a producer sends can steer a
        # sink (R18). Null on what ingest writes.
        ("redrive_target", pa.string()),
    ]
)

EVENT_SCHEMA = pa.schema(
    [
        ("message_id", pa.string()),
        ("epoch", pa.int64()),  # the writer's number, allocated by the console DB: orders writers
        # Order of events within one epoch. A delivery run numbers each partition's events in the
        # order they happened ((partition << 32) + n), so a queue's attempts can be replayed.
        ("step", pa.int64()),
        ("at", TS),
        ("from_state", pa.string()),
        ("to_state", pa.string()),
        ("queue", pa.string()),
        ("attempt", pa.int32()),
        ("delivery_count", pa.int32()),
        ("candidate", pa.bool_()),
        ("batch_limit", pa.int32()),  # R8: deliver in batches of at most this many; 0 = no limit
        ("next_attempt_at", TS),
        ("body_version", pa.int32()),
        ("actor", pa.string()),
        ("run_id", pa.string()),
        ("reason", pa.string()),
        ("exception_type", pa.string()),
        ("stack", pa.string()),
        ("queue_streak", pa.int32()),  # R11: failed attempts in a row on the queue after this one
    ]
)

# A message's state that every event carries after its transition, besides `to_state` itself:
# what the next rule starts from (workers.engine.rules).
STATE_FIELDS = (
    "queue",
    "delivery_count",
    "candidate",
    "batch_limit",
    "next_attempt_at",
    "body_version",
)

# The event columns of a message that has just arrived, before any delivery: no attempt, not a
# candidate, no batch limit, nothing scheduled, its first body. Ingest writes them; tests' rows
# start from them.
NEW_MESSAGE_COLUMNS = {
    "attempt": 0,
    "delivery_count": 0,
    "candidate": False,
    "batch_limit": 0,
    "next_attempt_at": None,
    "body_version": 1,
}

# What a message carries besides its key (message_id, version) and the queue it arrived on (the
# queue it is in is its state's): what a delivery hands its handler.
MESSAGE_CONTENT_COLUMNS = [
    name for name in MESSAGE_SCHEMA.names if name not in ("message_id", "version", "queue")
]
# A message's row but its body: what is read of it when the body is not wanted.
MESSAGE_COLUMNS_WITHOUT_BODY = [name for name in MESSAGE_SCHEMA.names if name != "body"]

STATE_SCHEMA = EVENT_SCHEMA
OPEN_SCHEMA = STATE_SCHEMA

# A history generation's rows: the events, each with the id of the events commit that recorded it
# (a message's events sort by (epoch, step), then by the commit they came in, as a read of the
# events commits in id order finds them).
HISTORY_SCHEMA = pa.schema([*EVENT_SCHEMA, pa.field("commit_id", pa.int64())])

NOTIFICATION_SCHEMA = pa.schema(
    [
        ("message_id", pa.string()),
        ("conversation_id", pa.string()),
        ("sender", pa.string()),
        ("code", pa.string()),
        ("description", pa.string()),
        ("at", TS),
        ("run_id", pa.string()),
    ]
)

# Claims: what a delivery run holds in DLNG, written before any handler runs so that a sweeper
# can apply R7 to them if the run dies (read with pyarrow, no Spark needed).
CLAIM_SCHEMA = pa.schema([f for f in EVENT_SCHEMA if f.name not in ("stack", "queue_streak")])

# A lake query's result, sorted by message_id: each message found, its current state and the
# metadata the console lists (workers.jobs.lake_query.result_rows writes it).
QUERY_RESULT_COLUMNS = [
    "message_id",
    "queue",
    "state",
    "delivery_count",
    "sender",
    "conversation_id",
    "enqueued_at",
    "body_size",
    "reason",
    "updated",
]

SCHEMAS = {
    "messages": MESSAGE_SCHEMA,
    "events": EVENT_SCHEMA,
    "state": STATE_SCHEMA,
    "open": OPEN_SCHEMA,
    "notifications": NOTIFICATION_SCHEMA,
    "history": HISTORY_SCHEMA,
}


def spark_schema(arrow_schema):
    """The Spark StructType of an arrow schema (imports pyspark only when asked)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(arrow_schema)


def ddl(arrow_schema):
    return spark_schema(arrow_schema).simpleString()[len("struct<") : -1]
