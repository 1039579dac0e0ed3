import base64
import hashlib
import json

import pytest

from console.ingest import services
from console.ingest.models import MessageKey
from console.ingest.services import messages_ingest
from console.lake.models import LakeCommit
from console.lake.selectors import lake_paths
from console.lake.services import lake
from tests.ingest.conftest import lake_events, lake_messages

pytestmark = pytest.mark.django_db


def _ingest(*records, source="test"):
    return messages_ingest(records=list(records), source=source)


def test_it_accepts_a_text_message_and_writes_it_to_the_lake(orders):
    result = _ingest(
        {
            "id": "m-1",
            "queue": "orders",
            "body": "héllo",
            "headers": {"trace": "t-1"},
            "conversation_id": "c-1",
            "sender": "shop@example.com",
        }
    )

    assert (result.accepted, result.duplicates, result.refused) == (1, 0, 0)
    row = lake_messages()["m-1"]
    assert row["body"] == "héllo".encode()
    assert row["body_sha256"] == hashlib.sha256("héllo".encode()).hexdigest()
    assert row["body_size"] == 6
    assert row["version"] == 1
    assert row["content_type"] == "text/plain"
    assert json.loads(row["headers"]) == {"trace": "t-1"}
    assert row["conversation_id"] == "c-1"
    assert row["sender"] == "shop@example.com"
    assert row["enqueued_at"] is not None
    key = MessageKey.objects.get(message_id="m-1")
    assert key.queue == "orders"
    assert key.body_sha256 == row["body_sha256"]
    assert key.commit.dataset == "messages"


def test_it_records_a_tbdl_event_per_message_in_a_visible_commit(orders):
    result = _ingest(
        {"id": "m-2", "queue": "orders", "body": "b"},
        {"id": "m-1", "queue": "orders", "body": "a"},
        source="api:alice",
    )

    assert len(lake_paths(dataset="messages")) == 1
    assert len(lake_paths(dataset="events")) == 1
    events = sorted(lake_events(), key=lambda e: e["message_id"])
    assert [e["message_id"] for e in events] == ["m-1", "m-2"]
    for event in events:
        assert event["from_state"] is None
        assert event["to_state"] == "TBDL"
        assert event["queue"] == "orders"
        assert event["step"] == 0
        assert event["attempt"] == 0
        assert event["delivery_count"] == 0
        assert event["candidate"] is False
        assert event["batch_limit"] == 0
        assert event["next_attempt_at"] is None
        assert event["body_version"] == 1
        assert event["actor"] == "api:alice"
        assert event["run_id"] is None
        assert event["reason"] == "ingested"
    events_commit = LakeCommit.objects.get(dataset="events")
    assert events[0]["epoch"] == events_commit.epoch
    assert events_commit.idempotency_key.startswith("ingest:")
    assert LakeCommit.objects.get(dataset="messages").id == result.commits[0]


def test_it_sorts_the_messages_rows_by_id(orders):
    _ingest(*({"id": f"m-{i}", "queue": "orders", "body": str(i)} for i in (3, 1, 2)))

    table = lake().read_arrow("messages", lake_paths(dataset="messages"))
    assert table["message_id"].to_pylist() == ["m-1", "m-2", "m-3"]


def test_it_counts_the_same_message_sent_again_as_a_duplicate(orders):
    message = {"id": "m-1", "queue": "orders", "body": "same"}
    _ingest(message)

    again = _ingest(message, message)

    assert (again.accepted, again.duplicates, again.refused) == (0, 2, 0)
    assert LakeCommit.objects.filter(dataset="messages").count() == 1
    assert len(lake_messages()) == 1


def test_it_refuses_an_id_reused_for_another_body(orders):
    _ingest({"id": "m-1", "queue": "orders", "body": "first"})

    result = _ingest(
        {"id": "m-2", "queue": "orders", "body": "fine"},
        {"id": "m-1", "queue": "orders", "body": "second"},
    )

    assert (result.accepted, result.refused) == (1, 1)
    error = result.errors[0]
    assert (error.position, error.message_id) == (1, "m-1")
    assert error.message == "message id m-1 was already accepted with a different body"
    assert lake_messages()["m-1"]["body"] == b"first"


def test_it_refuses_an_id_reused_for_another_body_inside_one_batch(orders):
    result = _ingest(
        {"id": "m-1", "queue": "orders", "body": "first"},
        {"id": "m-1", "queue": "orders", "body": "first"},
        {"id": "m-1", "queue": "orders", "body": "second"},
    )

    assert (result.accepted, result.duplicates, result.refused) == (1, 1, 1)
    assert result.errors[0].position == 2
    assert lake_messages()["m-1"]["body"] == b"first"


def test_it_refuses_a_body_over_the_limit_and_names_the_limit(orders, settings):
    settings.MAX_BODY_BYTES = 10

    result = _ingest(
        {"id": "big", "queue": "orders", "body": "x" * 11},
        {"id": "fits", "queue": "orders", "body": "x" * 10},
        {
            "id": "big64",
            "queue": "orders",
            "body": base64.b64encode(b"\0" * 11).decode(),
            "body_encoding": "base64",
        },
    )

    assert (result.accepted, result.refused) == (1, 2)
    assert [e.message_id for e in result.errors] == ["big", "big64"]
    assert result.errors[0].message == (
        "body is 11 bytes, over the limit of 10 bytes (MAX_BODY_BYTES)"
    )


def test_it_accepts_an_empty_body(orders):
    result = _ingest({"id": "empty", "queue": "orders", "body": ""})

    assert result.accepted == 1
    row = lake_messages()["empty"]
    assert (row["body"], row["body_size"]) == (b"", 0)
    assert row["body_sha256"] == hashlib.sha256(b"").hexdigest()


def test_it_keeps_a_base64_body_byte_exact(orders):
    data = bytes(range(256)) + b"\xff\xfe\x00"

    result = _ingest(
        {
            "id": "bin",
            "queue": "orders",
            "body": base64.b64encode(data).decode(),
            "body_encoding": "base64",
        }
    )

    assert result.accepted == 1
    row = lake_messages()["bin"]
    assert row["body"] == data
    assert row["body_size"] == len(data)
    assert row["content_type"] == "application/octet-stream"


def test_it_refuses_a_body_that_is_not_base64(orders):
    result = _ingest(
        {"id": "bad", "queue": "orders", "body": "not base64!", "body_encoding": "base64"}
    )

    assert result.refused == 1
    assert result.errors[0].message == "body is not valid base64"


def test_it_refuses_a_queue_that_does_not_exist(orders):
    result = _ingest({"id": "m-1", "queue": "ordres", "body": "x"})

    assert (result.accepted, result.refused) == (0, 1)
    assert result.errors[0].message == "unknown queue 'ordres': no queue of that name exists"
    assert result.errors[0].message_id == "m-1"
    assert not MessageKey.objects.exists()
    assert lake_paths(dataset="messages") == []


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"queue": "orders", "body": "x"}, "id is required"),
        ({"id": "", "queue": "orders", "body": "x"}, "id is empty"),
        ({"id": "x" * 201, "queue": "orders", "body": "x"}, "id is at most 200 characters"),
        ({"id": 7, "queue": "orders", "body": "x"}, "id must be a string"),
        ({"id": "a\tb", "queue": "orders", "body": "x"}, "character 2 is U+0009"),
        ({"id": "m", "body": "x"}, "queue is required"),
        ({"id": "m", "queue": "orders"}, "body is required"),
        ({"id": "m", "queue": "orders", "body": 5}, "body must be a string"),
        ({"id": "m", "queue": "orders", "body": "x", "body_encoding": "hex"}, "body_encoding"),
        ({"id": "m", "queue": "orders", "body": "x", "headers": {"a": 1}}, "headers must be"),
        ({"id": "m", "queue": "orders", "body": "x", "headers": ["a"]}, "headers must be"),
        ({"id": "m", "queue": "orders", "body": "x", "sender": 3}, "sender must be"),
        ({"id": "m", "queue": "orders", "body": "x", "queu": "y"}, "unknown field(s) 'queu'"),
        ({"id": "m", "queue": "orders", "body": "\ud800"}, "not valid Unicode"),
        ("just a string", "a message must be a JSON object"),
    ],
)
def test_it_refuses_a_malformed_record_with_a_readable_reason(orders, record, expected):
    result = _ingest(record)

    assert result.refused == 1
    assert expected in result.errors[0].message


def test_it_takes_the_good_records_of_a_batch_with_bad_ones(orders):
    result = _ingest(
        {"id": "a", "queue": "orders", "body": "1"},
        {"id": "b", "queue": "nope", "body": "2"},
        {"id": "c", "queue": "orders", "body": "3"},
    )

    assert (result.accepted, result.refused) == (2, 1)
    assert set(lake_messages()) == {"a", "c"}


def test_it_commits_a_large_batch_in_chunks_and_loses_nothing(orders, monkeypatch):
    monkeypatch.setattr(services, "CHUNK_RECORDS", 4)
    records = [{"id": f"m-{i:02d}", "queue": "orders", "body": str(i)} for i in range(10)]
    records.insert(5, {"id": "m-00", "queue": "orders", "body": "0"})

    result = _ingest(*records)

    assert (result.accepted, result.duplicates) == (10, 1)
    assert len(result.commits) == 3
    assert len(lake_paths(dataset="messages")) == 3
    assert len(lake_paths(dataset="events")) == 3
    assert sorted(lake_messages()) == [f"m-{i:02d}" for i in range(10)]
    assert len(lake_events()) == 10
    assert MessageKey.objects.count() == 10


def test_it_writes_nothing_when_nothing_is_accepted(orders):
    result = _ingest({"id": "m", "queue": "nope", "body": "x"})

    assert result.accepted == 0
    assert not LakeCommit.objects.exists()
