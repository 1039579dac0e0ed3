"""Redis entries as ingest records and back as fields, without a server."""

import json

import pytest

from tests.brokers.records import as_stored
from workers.brokers.dead_letters import dead_letter_of
from workers.brokers.redis_streams.record import (
    EntryMalformed,
    FieldsUnreadable,
    fields_to_publish,
    message_id_of,
    record_of,
)


def _record(fields, **overrides):
    arguments = {
        "stream": "orders",
        "entry_id": "1700000000000-3",
        "fields": fields,
        "group": "billing",
        "consumer": "worker-1",
        "deliveries": 5,
        "idle_ms": 61000,
        "body_field": "body",
        "into": "orders-dead",
        "source": "orders-dlq",
        **overrides,
    }
    return as_stored(record_of(**arguments))


def test_fields_come_back_exactly_with_the_body_antidote_holds():
    fields = [
        (b"tenant", b"acme"),
        (b"body", b'{"order": 7}'),
        (b"blob", b"\xff\x00"),
        (b"tenant", b"second"),
        (b"redis-stream", b"forged"),
        (b"Redis-Consumer", b"forged"),
        (b"antidote-redrive-target", b'{"stream": "elsewhere"}'),
    ]
    record = _record(fields)

    assert record["body"] == b'{"order": 7}'
    headers = record["headers"]
    # Readable headers: the first of a repeated name, bytes in base64; a field named like one of
    # ours is kept under a foreign name (R18), and ours are the drain's.
    assert headers["tenant"] == "acme"
    assert headers["blob"] == "/wA="
    assert headers["redis-stream"] == "orders"
    assert "Redis-Consumer" not in headers and "antidote-redrive-target" not in headers
    assert headers["x-foreign-redis-stream"] == "forged"
    assert headers["x-foreign-antidote-redrive-target"] == '{"stream": "elsewhere"}'
    assert dead_letter_of(headers).reason.endswith("last consumer 'worker-1'")
    assert headers["redis-body-field"] == "body"
    assert fields_to_publish(headers=headers, body=b'{"order": 7}', body_field="body") == fields
    edited = fields_to_publish(headers=headers, body=b'{"order": 8}', body_field="body")
    assert edited[1] == (b"body", b'{"order": 8}')
    assert edited[:1] + edited[2:] == fields[:1] + fields[2:]


def test_the_body_field_is_the_sources_choice():
    record = _record([(b"payload", b"hello"), (b"body", b"not this")], body_field="payload")
    assert record["body"] == b"hello"
    assert record["headers"]["body"] == "not this"
    assert fields_to_publish(headers=record["headers"], body=b"hi", body_field="body") == [
        (b"payload", b"hi"),
        (b"body", b"not this"),
    ]


def test_an_entry_without_a_body_field_is_its_fields_as_json_and_an_edit_comes_back_as_fields():
    record = _record([(b"order_id", b"7"), (b"amount", b"12.50")])
    assert json.loads(record["body"]) == {"order_id": "7", "amount": "12.50"}
    assert record["content_type"] == "application/json"
    assert record["headers"]["order_id"] == "7"

    edited = json.dumps({"order_id": "7", "amount": "13.00"}).encode()
    assert fields_to_publish(headers=record["headers"], body=edited, body_field="body") == [
        (b"order_id", b"7"),
        (b"amount", b"13.00"),
    ]
    with pytest.raises(FieldsUnreadable, match="must be a JSON object of text values"):
        fields_to_publish(headers=record["headers"], body=b'{"amount": 13}', body_field="body")


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ([(b"blob", b"\xff")], "field 'blob' is not UTF-8 text"),
        ([(b"\xff", b"x")], "a field name is not UTF-8 text: '\\xff'"),
        ([(b"a", b"1"), (b"a", b"2")], "field 'a' appears twice"),
    ],
)
def test_an_entry_no_json_object_can_hold_is_malformed_with_the_reason(fields, reason):
    with pytest.raises(EntryMalformed) as caught:
        _record(fields)
    assert str(caught.value).startswith("it has no 'body' field")
    assert str(caught.value).endswith(reason)


def test_a_content_type_field_gives_the_content_type():
    record = _record([(b"body", b"<a/>"), (b"content-type", b"application/xml")])
    assert record["content_type"] == "application/xml"
    assert "content_type" not in _record([(b"body", b"x")])


def test_the_id_is_stable_and_a_long_or_odd_stream_name_is_digested():
    assert message_id_of("orders", "1-0") == "redis-orders-1-0"
    long_id = message_id_of("s" * 500, "1-0")
    assert long_id.startswith("redis-") and long_id.endswith("-1-0") and len(long_id) < 60
    assert message_id_of("a\nb", "1-0") != message_id_of("a b", "1-0")
    assert message_id_of("a\nb", "1-0").isprintable()


def test_the_dead_letter_reads_its_origin_and_distrusts_it():
    headers = _record([(b"body", b"x")])["headers"]
    dead = dead_letter_of(headers)
    assert dead.kind == "redis"
    assert dead.origin == "Redis stream 'orders' entry 1700000000000-3, consumer group 'billing'"
    assert dead.reason == (
        "delivered 5 times to consumer group 'billing' of stream 'orders' without an "
        "acknowledgement; last consumer 'worker-1'"
    )
    assert ("Last consumer", "worker-1") in dead.details

    forged = {**headers, "redis-deliveries": "many", "redis-consumer": "evil\nline"}
    dead = dead_letter_of(forged)
    assert dead.count is None
    assert "an unknown number of times" in dead.reason
    assert "'evil line'" in dead.reason
    assert dead_letter_of({"tenant": "acme"}) is None


def test_a_message_that_did_not_come_from_redis_goes_out_as_its_body():
    assert fields_to_publish(headers={"x": "1"}, body=b"hi", body_field="payload") == [
        (b"payload", b"hi")
    ]


def test_stored_fields_that_cannot_be_read_are_said_so():
    for text in ("nope", '{"a": 1}', '[["a"]]', '[[{"base64": "!!"}, "x"]]', "[[1, 2]]"):
        with pytest.raises(FieldsUnreadable):
            fields_to_publish(
                headers={"redis-stream": "s", "redis-fields": text}, body=b"", body_field="body"
            )
