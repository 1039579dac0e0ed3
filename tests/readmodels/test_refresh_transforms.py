"""The refresh job's pure transforms, on hand-written rows (no files, no Django)."""

from datetime import UTC, datetime, timedelta

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from tests.ledger_rows import event_row, naive
from workers.jobs.fingerprint import fingerprint
from workers.jobs.refresh import (
    delivered_before,
    group_rows,
    hourly_flows,
    index_rows,
    summarize,
)
from workers.lake.schema import EVENT_SCHEMA, MESSAGE_SCHEMA, ddl

pytestmark = pytest.mark.spark

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def event(mid, epoch, step, frm, to, *, at, queue="orders", count=0, reason=None, exc=None):
    columns = {
        # As the engine writes them: an event that leaves DLNG ends an attempt (numbered from 1).
        "attempt": max(count, 1) if frm == "DLNG" else 0,
        "delivery_count": count,
        "reason": reason,
        "exception_type": exc,
    }
    return event_row(mid, epoch, step, frm, to, at=at, queue=queue, **columns)


def events_df(spark, rows):
    return spark.createDataFrame(rows, ddl(EVENT_SCHEMA))


HISTORY = [
    # a: failed twice (the later failure, in a later epoch, is its latest), then quarantined
    event("a", 0, 0, None, "TBDL", at=T0),
    event("a", 5, 1, "TBDL", "DLNG", at=T0 + MINUTE),
    event("a", 5, 2, "DLNG", "WAIT", at=T0 + MINUTE, count=1, reason="order 1 gone", exc="E"),
    event("a", 6, 1, "WAIT", "TBDL", at=T0 + 2 * MINUTE, count=1),
    event("a", 6, 2, "TBDL", "DLNG", at=T0 + 3 * MINUTE, count=1),
    event("a", 6, 3, "DLNG", "NDLV", at=T0 + 3 * MINUTE, count=2, reason="order 2 gone", exc="E"),
    # b: delivered at once, never failed
    event("b", 0, 0, None, "TBDL", at=T0),
    event("b", 5, 7, "TBDL", "DLNG", at=T0 + MINUTE),
    event("b", 5, 8, "DLNG", "DLVD", at=T0 + MINUTE),
    # c: ended with its conversation (TBDL -> ENDED is not a failed attempt)
    event("c", 0, 0, None, "TBDL", at=T0),
    event("c", 7, 1, "TBDL", "ENDED", at=T0 + 4 * MINUTE, reason="conversation ended"),
]


def test_summarize_takes_the_latest_event_as_state_and_the_latest_failure_as_failure(spark):
    summary = summarize(events_df(spark, HISTORY)).select(
        "message_id",
        "queue",
        "state",
        "delivery_count",
        "updated_at",
        "first_failure_at",
        "last_failure_at",
        "failure_reason",
        "failure_exception_type",
    )

    assertDataFrameEqual(
        summary,
        [
            Row(
                "a",
                "orders",
                "NDLV",
                2,
                naive(T0 + 3 * MINUTE),
                naive(T0 + MINUTE),
                naive(T0 + 3 * MINUTE),
                "order 2 gone",
                "E",
            ),
            Row("b", "orders", "DLVD", 0, naive(T0 + MINUTE), None, None, None, None),
            Row("c", "orders", "ENDED", 0, naive(T0 + 4 * MINUTE), None, None, None, None),
        ],
    )


def messages_df(spark, rows):
    schema = f"{ddl(MESSAGE_SCHEMA)}, body_path string"
    return spark.createDataFrame(rows, schema)


def message(mid, version, queue, path, *, size=10):
    return {
        "message_id": mid,
        "version": version,
        "queue": queue,
        "body": b"",
        "body_sha256": "",
        "body_size": size,
        "content_type": "text/plain",
        "headers": "{}",
        "conversation_id": None,
        "sender": "s@example.test",
        "enqueued_at": T0,
        "body_path": path,
    }


def test_index_rows_flag_delivered_messages_that_never_failed_and_find_the_current_body(spark):
    summary = summarize(events_df(spark, HISTORY))
    messages = messages_df(
        spark,
        [
            message("a", 1, "orders.old", "messages/20260301/ingest-1", size=10),
            message("a", 2, "orders", "messages/20260302/edit-1", size=12),
            message("b", 1, "orders", "messages/20260301/ingest-1"),
            message("c", 1, "orders", "messages/20260301/ingest-1"),
        ],
    )
    # a's latest event says body version 1; pretend an edit moved it to version 2.
    summary = summary.withColumn(
        "body_version", summary.body_version + (summary.message_id == "a").cast("int")
    )

    rows = index_rows(summary, messages).select(
        "message_id",
        "original_queue",
        "state",
        "reason",
        "group_id",
        "conversation_id",
        "body_size",
        "body_version",
        "body_path",
        "indexed",
    )

    group_a = fingerprint("orders", "E", "order 2 gone", None)[0]
    assertDataFrameEqual(
        rows,
        [
            Row(
                "a",
                "orders.old",
                "NDLV",
                "order 2 gone",
                group_a,
                "",
                12,
                2,
                "messages/20260302/edit-1",
                True,
            ),
            Row("b", "orders", "DLVD", "", "", "", 10, 1, "messages/20260301/ingest-1", False),
            Row("c", "orders", "ENDED", "", "", "", 10, 1, "messages/20260301/ingest-1", True),
        ],
    )


def test_group_rows_describe_each_group_by_its_latest_failure(spark):
    rows = spark.createDataFrame(
        [
            ("m1", "g1", True, T0, "orders", "E", "order <n>", "", "order 1", "s1"),
            ("m2", "g1", True, T0 + MINUTE, "orders", "E", "order <n>", "", "order 2", "s2"),
            ("m3", "g2", True, T0, "orders", "F", "other", "", "other", "s3"),
            ("m4", "", True, None, None, "", None, None, "", ""),
            ("m5", "g3", False, T0, "orders", "G", "gone", "", "gone", "s5"),
        ],
        "message_id string, group_id string, indexed boolean, last_failure_at timestamp, "
        "failure_queue string, exception_type string, pattern string, frames string, "
        "sample_reason string, sample_stack string",
    )

    assertDataFrameEqual(
        group_rows(rows),
        [
            Row("g1", "orders", "E", "order <n>", "", "m2", "order 2", "s2", naive(T0 + MINUTE)),
            Row("g2", "orders", "F", "other", "", "m3", "other", "s3", naive(T0)),
        ],
    )


def test_delivered_before_names_the_messages_whose_state_before_the_new_events_was_dlvd(spark):
    new = [
        # b, delivered, is decided again and moved to another queue; c, ended, is too
        event("b", 9, 1, "DLVD", "TBDL", at=T0 + 9 * MINUTE, queue="payments"),
        event("c", 9, 2, "ENDED", "TBDL", at=T0 + 9 * MINUTE),
        # d is new: nothing before
        event("d", 9, 3, None, "TBDL", at=T0 + 9 * MINUTE),
    ]
    # The history holds the new events too (a generation may have folded them already).
    history = events_df(spark, HISTORY + new)

    found = delivered_before(history, events_df(spark, new))

    assertDataFrameEqual(found, [Row("b", "orders")])


def test_the_hourly_flows_count_each_event_in_every_flow_it_belongs_to(spark):
    hour = T0.replace(minute=0)
    events = events_df(
        spark,
        [
            event("a", 1, 1, "DLNG", "NDLV", at=hour + 5 * MINUTE),
            event("b", 1, 2, "DLNG", "NDLV", at=hour + 59 * MINUTE),
            event("c", 1, 3, "DLNG", "NDLV", at=hour + 60 * MINUTE),
            event("d", 1, 4, "DLNG", "NDLV", at=hour, queue="payments"),
            event("e", 1, 5, "DLNG", "WAIT", at=hour),
            event("f", 1, 6, "DLNG", "DLVD", at=hour),
            event("a", 2, 1, "NDLV", "TBDL", at=hour + 61 * MINUTE),  # reprocessed
            event("b", 2, 2, "NDLV", "FAIL", at=hour + 62 * MINUTE),  # failed by a person
            event("g", 1, 7, None, "TBDL", at=hour),  # taken in: no flow
            event("h", 1, 8, "TBDL", "DLNG", at=hour),  # claimed: no flow
        ],
    )

    assertDataFrameEqual(
        hourly_flows(events),
        [
            Row("orders", naive(hour), "quarantined", 2),
            Row("orders", naive(hour), "failed", 3),  # a, b (quarantined too) and e
            Row("orders", naive(hour), "delivered", 1),
            Row("orders", naive(hour + timedelta(hours=1)), "quarantined", 1),
            Row("orders", naive(hour + timedelta(hours=1)), "failed", 1),
            Row("orders", naive(hour + timedelta(hours=1)), "released", 2),
            Row("payments", naive(hour), "quarantined", 1),
            Row("payments", naive(hour), "failed", 1),
        ],
    )


def test_the_job_writes_the_failure_group_columns_the_loader_reads():
    from console.readmodels.services import GROUP_FIELDS
    from workers.jobs.refresh import GROUP_COLUMNS

    # And when each group's sample failed, which decides whether it replaces the group's.
    assert list(GROUP_COLUMNS) == [*GROUP_FIELDS, "sample_at"]
