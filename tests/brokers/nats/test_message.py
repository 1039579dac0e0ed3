"""NATS advisories and messages as Antidote records, and back, without a server."""

import base64
import json

import pytest

from tests.brokers.records import as_stored
from workers.brokers.dead_letters import dead_letter_of
from workers.brokers.nats import record as M

MAX_DELIVER = {
    "type": "io.nats.jetstream.advisory.v1.max_deliver",
    "id": "adv-1",
    "timestamp": "2026-11-27T10:00:00Z",
    "stream": "ORDERS",
    "consumer": "billing",
    "stream_seq": 42,
    "deliveries": 5,
}
TERMINATED = {
    "type": "io.nats.jetstream.advisory.v1.terminated",
    "id": "adv-2",
    "timestamp": "2026-11-27T10:00:00Z",
    "stream": "ORDERS",
    "consumer": "billing",
    "consumer_seq": 7,
    "stream_seq": 43,
    "deliveries": 1,
    "reason": "unknown customer 17",
}


def _get_reply(
    *, subject="orders.created", seq=42, hdrs=None, data=b"{}", time="2026-11-27T09:59:59.5Z"
):
    message = {
        "subject": subject,
        "seq": seq,
        "data": base64.b64encode(data).decode(),
        "time": time,
    }
    if hdrs is not None:
        message["hdrs"] = base64.b64encode(hdrs).decode()
    return json.dumps(
        {"type": "io.nats.jetstream.api.v1.stream_msg_get_response", "message": message}
    )


def _original(**kwargs):
    return M.original_of(_get_reply(**kwargs).encode(), stream="ORDERS", seq=kwargs.get("seq", 42))


def test_a_max_deliver_advisory_is_read():
    advisory = M.advisory_of(json.dumps(MAX_DELIVER).encode())
    assert advisory == M.Advisory(
        kind="max_deliver",
        id="adv-1",
        stream="ORDERS",
        consumer="billing",
        stream_seq=42,
        deliveries=5,
        reason="",
    )


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"{", "the advisory is not JSON"),
        (b"[]", "the advisory is not a JSON object"),
        (
            json.dumps({**MAX_DELIVER, "type": "dead"}).encode(),
            "the advisory's type is dead, not a max_deliver or terminated advisory",
        ),
        (json.dumps({**MAX_DELIVER, "stream": ""}).encode(), "the advisory names no stream"),
        (
            json.dumps({**MAX_DELIVER, "stream_seq": True}).encode(),
            "the advisory's stream_seq is not a positive whole number",
        ),
    ],
)
def test_an_unreadable_advisory_says_why(body, why):
    with pytest.raises(M.AdvisoryUnreadable) as unreadable:
        M.advisory_of(body)
    assert str(unreadable.value) == why


def test_another_of_jetstreams_advisories_is_told_apart():
    with pytest.raises(M.OtherAdvisory):
        M.advisory_of(json.dumps({**MAX_DELIVER, "type": "io.nats.jetstream.advisory.v1.nak"}))


def test_headers_are_read_exactly():
    block = b"NATS/1.0\r\nX-Trace: t-1\r\nX-Note:  fa\xc3\xa7ade: yes \r\nNats-Msg-Id: o-1\r\n\r\n"
    assert M.headers_of(block) == {"X-Trace": "t-1", "X-Note": "façade: yes", "Nats-Msg-Id": "o-1"}
    assert M.headers_of(b"") == {}


def test_a_message_the_stream_no_longer_holds_is_gone():
    reply = json.dumps(
        {"error": {"code": 404, "err_code": 10037, "description": "no message found"}}
    )
    with pytest.raises(M.OriginalGone) as gone:
        M.original_of(reply.encode(), stream="ORDERS", seq=42)
    assert str(gone.value) == (
        "message 42 is no longer in stream 'ORDERS' (deleted, purged or removed by the stream's "
        "limits before it was drained): no message found"
    )


def test_the_record_keeps_the_origin_and_the_reason():
    advisory = M.advisory_of(json.dumps(TERMINATED).encode())
    original = _original(seq=43, hdrs=b"NATS/1.0\r\nX-Trace: t-1\r\n\r\n", data=b'{"order": 1}')
    record = as_stored(
        M.record_of(advisory=advisory, original=original, into="orders-dead", source="orders")
    )

    assert record["id"] == M.message_id_of(advisory, original)
    assert record["body"] == b'{"order": 1}'
    assert record["headers"] == {
        "X-Trace": "t-1",
        "nats-subject": "orders.created",
        "nats-stream": "ORDERS",
        "nats-sequence": "43",
        "nats-stored-at": "2026-11-27T09:59:59.5Z",
        "nats-consumer": "billing",
        "nats-deliveries": "1",
        "nats-advisory": "terminated",
        "nats-terminated-reason": "unknown customer 17",
        "nats-headers": '{"X-Trace": "t-1"}',
        "nats-reason": "terminated by consumer 'billing' of stream 'ORDERS' (AckTerm) after "
        "delivering it once: unknown customer 17",
        "antidote-source": "orders",
    }
    dead = dead_letter_of(record["headers"])
    assert dead.kind == "nats"
    assert dead.exception_type == "nats.terminated"
    assert dead.reason == record["headers"]["nats-reason"]
    assert dead.origin == "NATS stream 'ORDERS' subject 'orders.created' sequence 43"
    assert ("Consumer's reason", "unknown customer 17") in dead.details


def test_the_id_is_stable_for_one_dead_letter_and_new_for_another():
    advisory = M.advisory_of(json.dumps(MAX_DELIVER).encode())
    first = M.message_id_of(advisory, _original())
    assert first.startswith("nats-ORDERS-42-")
    assert M.message_id_of(advisory, _original()) == first
    # The stream deleted and created again: sequence 42 again, stored at another time.
    assert M.message_id_of(advisory, _original(time="2026-11-28T00:00:00Z")) != first
    # Another consumer gave up on the same message: another failure.
    other = M.advisory_of(json.dumps({**MAX_DELIVER, "consumer": "shipping"}).encode())
    assert M.message_id_of(other, _original()) != first


def test_control_characters_in_a_reason_do_not_forge_lines():
    advisory = M.advisory_of(json.dumps({**TERMINATED, "reason": "bad\nFAKE: line"}).encode())
    assert M.reason_of(advisory).endswith(": bad FAKE: line")


def test_a_header_of_the_message_spelled_like_ours_cannot_forge_the_record():
    advisory = M.advisory_of(json.dumps(MAX_DELIVER).encode())
    original = _original(hdrs=b"NATS/1.0\r\nNats-Reason: all fine\r\nX-Trace: t-1\r\n\r\n")
    record = M.record_of(advisory=advisory, original=original, into="q", source="s")
    headers = as_stored(record)["headers"]
    assert "Nats-Reason" not in headers
    # Set aside by ingest, for people to see (R18).
    assert headers["x-foreign-Nats-Reason"] == "all fine"
    assert dead_letter_of(headers).reason.startswith("max deliveries reached")
    # Kept whole for the redrive.
    assert json.loads(headers["nats-headers"]) == {"Nats-Reason": "all fine", "X-Trace": "t-1"}


def test_a_nats_message_is_published_with_its_own_headers():
    headers = {
        "X-Trace": "shown, maybe edited",
        "nats-headers": json.dumps(
            {"X-Trace": "t-1", "Nats-Msg-Id": "o-1", "Nats-Expected-Last-Sequence": "41"}
        ),
        "nats-subject": "orders.created",
        "antidote-source": "orders",
    }
    assert M.publish_headers(headers) == {"X-Trace": "t-1"}


def test_another_message_is_published_without_antidotes_bookkeeping():
    headers = {
        "X-Trace": "t-1",
        "antidote-source": "api",
        "Antidote-Redrive-Target": "{}",
        "amqp-properties": "{}",
        "nats-subject": "orders.created",
    }
    assert M.publish_headers(headers, content_type="application/json") == {
        "X-Trace": "t-1",
        "Content-Type": "application/json",
    }


def test_unreadable_stored_headers_are_refused():
    with pytest.raises(ValueError, match="the stored NATS headers are not JSON"):
        M.publish_headers({"nats-headers": "{"})


def test_the_dedupe_id_changes_with_the_body_and_the_subject_only():
    first = M.dedupe_id("m-1", "orders.created", b"x")
    assert first == M.dedupe_id("m-1", "orders.created", b"x")
    assert first.startswith("antidote:m-1:")
    assert M.dedupe_id("m-1", "orders.created", b"edited") != first
    assert M.dedupe_id("m-1", "orders.retry", b"x") != first
    assert M.dedupe_id("m-2", "orders.created", b"x") != first
