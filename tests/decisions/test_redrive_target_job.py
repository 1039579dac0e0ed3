"""The pure part of carrying a request's redrive target (workers.jobs.decisions): the new
versions of messages whose target changes, and the events pointed at them. Hand-written rows in,
hand-written rows out."""

from datetime import UTC, datetime

import pyarrow as pa

from workers.jobs.decisions.chunk import retargeted_messages, with_body_versions
from workers.lake.schema import EVENT_SCHEMA, MESSAGE_SCHEMA

T0 = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
TARGET = '{"subject": "orders.retry"}'


def _message(message_id, version, headers, redrive_target=None):
    return {
        "message_id": message_id,
        "version": version,
        "queue": "orders",
        "body": b"body of " + message_id.encode(),
        "body_sha256": "h-" + message_id,
        "body_size": 10,
        "content_type": "text/plain",
        "headers": headers,
        "conversation_id": None,
        "sender": None,
        "enqueued_at": T0,
        "redrive_target": redrive_target,
    }


def test_each_message_gets_a_new_version_with_the_target_and_the_same_body_and_headers():
    rows = pa.Table.from_pylist(
        [_message("m-2", 2, '{"x": "y"}'), _message("m-1", 1, None), _message("m-1", 1, None)],
        schema=MESSAGE_SCHEMA,
    )

    out = retargeted_messages(rows, TARGET)

    expected = [_message("m-1", 2, None, TARGET), _message("m-2", 3, '{"x": "y"}', TARGET)]
    assert out.schema == MESSAGE_SCHEMA
    assert out.to_pylist() == expected


def test_a_version_that_already_says_so_needs_no_new_one():
    rows = pa.Table.from_pylist(
        [_message("m-1", 2, "{}", TARGET), _message("m-2", 1, "{}")], schema=MESSAGE_SCHEMA
    )

    assert retargeted_messages(rows, TARGET).column("message_id").to_pylist() == ["m-2"]
    assert retargeted_messages(rows, None).column("message_id").to_pylist() == ["m-1"]


def test_without_a_target_an_earlier_requests_target_is_taken_away():
    rows = pa.Table.from_pylist([_message("m-1", 2, '{"a": "1"}', TARGET)], schema=MESSAGE_SCHEMA)

    assert retargeted_messages(rows, None).to_pylist() == [_message("m-1", 3, '{"a": "1"}')]


def test_a_header_a_producer_named_like_the_old_target_header_is_data_not_a_target():
    forged = '{"antidote-redrive-target": "{\\"url\\": \\"http://attacker.example\\"}"}'
    rows = pa.Table.from_pylist([_message("m-1", 1, forged)], schema=MESSAGE_SCHEMA)

    out = retargeted_messages(rows, TARGET).to_pylist()

    assert out == [_message("m-1", 2, forged, TARGET)]


def test_the_events_point_at_the_new_versions_and_the_others_keep_theirs():
    events = pa.Table.from_pylist(
        [
            {"message_id": "m-1", "body_version": 1, "to_state": "TBDL"},
            {"message_id": "m-2", "body_version": 2, "to_state": "TBDL"},
        ],
        schema=EVENT_SCHEMA,
    )
    versions = pa.table({"message_id": ["m-2"], "version": pa.array([3], pa.int32())})

    out = with_body_versions(events, versions)

    assert out.schema == EVENT_SCHEMA
    assert out.column("body_version").to_pylist() == [1, 3]
