"""Ending a conversation with an error (R13, and R6's return to sender).

The sender of each ended message gets an error notification (message id, conversation id, code,
description), and every other message of the same conversation that is not final is ENDED too,
so nothing of the conversation is left waiting (Service Broker's END CONVERSATION WITH ERROR)."""

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from workers.engine import states as S
from workers.jobs.state import EVENT_COLUMNS

# Steps past anything a delivery partition numbers, so these events come last in their epoch.
CONVERSATION_STEP_BASE = 1 << 62


def end_conversations(
    state: DataFrame, messages: DataFrame, ended: DataFrame, *, epoch, at, actor, run_id
):
    """`ended`: (message_id, reason, code) of messages just ENDED; `state`: current state with
    those endings applied. Returns (sibling events, notifications)."""
    meta = messages.select("message_id", "conversation_id", "sender").dropDuplicates(["message_id"])
    ended_meta = ended.join(meta, on="message_id", how="left")
    notifications = ended_meta.select(
        "message_id",
        "conversation_id",
        "sender",
        "code",
        F.col("reason").alias("description"),
        F.lit(at).cast("timestamp").alias("at"),
        F.lit(run_id).alias("run_id"),
    )
    conversations = (
        ended_meta.where(F.col("conversation_id").isNotNull())
        .groupBy("conversation_id")
        .agg(F.min("message_id").alias("ended_by"))
    )
    siblings = (
        state.where(F.col("to_state").isin(list(S.OPEN_STATES)))
        .join(meta.select("message_id", "conversation_id"), on="message_id")
        .join(conversations, on="conversation_id")
        .join(ended.select("message_id"), on="message_id", how="left_anti")
    )
    events = siblings.select(
        "message_id",
        F.lit(epoch).cast("long").alias("epoch"),
        (F.lit(CONVERSATION_STEP_BASE) + F.monotonically_increasing_id()).alias("step"),
        F.lit(at).cast("timestamp").alias("at"),
        F.col("to_state").alias("from_state"),
        F.lit(S.ENDED).alias("to_state"),
        "queue",
        F.lit(0).cast("int").alias("attempt"),
        "delivery_count",
        "candidate",
        "batch_limit",
        F.lit(None).cast("timestamp").alias("next_attempt_at"),
        "body_version",
        F.lit(actor).alias("actor"),
        F.lit(run_id).alias("run_id"),
        F.concat(
            F.lit(f"{S.REASON_CONVERSATION_ENDED} (message "), F.col("ended_by"), F.lit(")")
        ).alias("reason"),
        F.lit(None).cast("string").alias("exception_type"),
        F.lit(None).cast("string").alias("stack"),
        F.lit(None).cast("int").alias("queue_streak"),
    ).select(*EVENT_COLUMNS)
    return events, notifications
