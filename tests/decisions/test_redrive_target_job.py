"""The pure part of carrying a request's redrive target (workers.jobs.decisions): a message's
headers with or without the target, its new versions, and the events pointed at them. Hand-written
rows in, hand-written rows out."""

import json
from datetime import UTC, datetime

import pyarrow as pa

from workers.brokers.connector import REDRIVE_TARGET_HEADER
from workers.jobs import decisions as D
from workers.lake.schema import EVENT_SCHEMA, MESSAGE_SCHEMA

T0 = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
TARGET = '{"subject": "orders.retry"}'


def _message(message_id, version, headers):
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
    }


def test_the_target_is_added_to_the_headers_in_their_order():
    assert D.headers_with_target('{"b": 1, "a": 2}', TARGET) == (
        '{"b": 1, "a": 2, "antidote-redrive-target": "{\\"subject\\": \\"orders.retry\\"}"}'
    )


def test_headers_that_already_say_so_need_no_new_version():
    assert D.headers_with_target(json.dumps({REDRIVE_TARGET_HEADER: TARGET}), TARGET) is None
    assert D.headers_with_target('{"a": 1}', None) is None
    assert D.headers_with_target(None, None) is None


def test_without_a_target_an_earlier_requests_target_is_taken_away():
    headers = json.dumps({"a": 1, REDRIVE_TARGET_HEADER: TARGET})

    assert D.headers_with_target(headers, None) == '{"a": 1}'
    assert D.headers_with_target(headers, TARGET) is None


def test_each_message_gets_a_new_version_with_the_target_and_the_same_body():
    rows = pa.Table.from_pylist(
        [_message("m-2", 2, '{"x": "y"}'), _message("m-1", 1, None), _message("m-1", 1, None)],
        schema=MESSAGE_SCHEMA,
    )

    out = D.retargeted_messages(rows, TARGET)

    expected = [
        _message(
            "m-1", 2, f'{{"{REDRIVE_TARGET_HEADER}": "{{\\"subject\\": \\"orders.retry\\"}}"}}'
        ),
        _message(
            "m-2",
            3,
            f'{{"x": "y", "{REDRIVE_TARGET_HEADER}": "{{\\"subject\\": \\"orders.retry\\"}}"}}',
        ),
    ]
    assert out.schema == MESSAGE_SCHEMA
    assert out.to_pylist() == expected


def test_the_events_point_at_the_new_versions_and_the_others_keep_theirs():
    events = pa.Table.from_pylist(
        [
            {"message_id": "m-1", "body_version": 1, "to_state": "TBDL"},
            {"message_id": "m-2", "body_version": 2, "to_state": "TBDL"},
        ],
        schema=EVENT_SCHEMA,
    )
    versions = pa.table({"message_id": ["m-2"], "version": pa.array([3], pa.int32())})

    out = D.with_body_versions(events, versions)

    assert out.schema == EVENT_SCHEMA
    assert out.column("body_version").to_pylist() == [1, 3]
