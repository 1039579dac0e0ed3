"""The whole loop on the real Redis: a consumer group's consumer keeps failing on entries, the
source (through the consumer loop every broker shares) drains them into Antidote, the intake
handler quarantines each with Redis's reason, and an approved "reprocess to its origin" appends
them to their stream again, where the group's consumer gets each once, its fields unchanged."""

import time

import pytest

from tests.brokers.redis_streams.conftest import URL_ENV
from tests.brokers.sources import drained_until, intake_quarantined, redriven, round_trip_load
from tests.decisions.desk import make_desk

pytestmark = pytest.mark.services

COUNT = 12
GROUP = "refunds"
SINK = "workers.brokers.redis_streams.publisher"


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


def _fields(n):
    fields = [
        (b"body", b'{"refund": %d, "amount": "12,50"}\n\x00\xfe' % n),
        (b"tenant", b"acme"),
        (b"raw", b"\x00\xff"),
        (b"attempt", b"%d" % n),
    ]
    if n % 3 == 0:
        fields.append((b"tenant", b"twice"))
    return fields


def _read(client, stream, consumer):
    """[(entry id, [(name, value), ...])] that `consumer` of GROUP is given now, as Redis sends
    them (redis-py's dict would hide a name given twice)."""
    reply = client.execute_command(
        "XREADGROUP", "GROUP", GROUP, consumer, "COUNT", 1000, "STREAMS", stream, ">"
    )
    if not reply:
        return []
    ((_, entries),) = reply.items() if isinstance(reply, dict) else reply
    return [(i.decode(), list(zip(f[::2], f[1::2], strict=True))) for i, f in entries]


def test_an_entry_its_consumer_keeps_failing_comes_back_to_its_stream_once_and_unchanged(
    desk, streams
):
    client, stream = streams.client, streams.key("refunds")
    client.xgroup_create(stream, GROUP, id="$", mkstream=True)
    client.set_response_callback("XREADGROUP", lambda response, **options: response)
    ids = [
        client.execute_command("XADD", stream, "*", *[p for f in _fields(n) for p in f]).decode()
        for n in range(COUNT)
    ]
    # The refunds service fails on every one, three times: it never acknowledges, and re-reads
    # its pending entries when it starts again.
    assert [i for i, _ in _read(client, stream, "refunds-1")] == ids
    for _ in range(2):
        client.execute_command(
            "XREADGROUP", "GROUP", GROUP, "refunds-1", "COUNT", 1000, "STREAMS", stream, "0"
        )
    assert {c for c, _ in streams.pending(stream, GROUP).values()} == {"refunds-1"}
    time.sleep(0.2)
    round_trip_load(
        name="refunds-stream",
        kind="redis",
        url_env=URL_ENV,
        stream=stream,
        sink=SINK,
        options={"group": GROUP, "min_deliveries": 3, "min_idle_ms": 100},
    )

    drained_until(
        "refunds-stream",
        into="refunds-dead",
        count=COUNT,
        done=lambda: not streams.pending(stream, GROUP),
    )
    assert streams.pending(stream, GROUP) == {}
    assert not client.exists(stream + ":antidote-refused")

    # Delivered once to the intake handler: quarantined with the reason Redis's counter gives.
    quarantined = intake_quarantined(desk, count=COUNT)
    row = quarantined.get(message_id=f"redis-{stream}-{ids[3]}")
    assert row.exception_type == "redis.unacknowledged"
    assert row.reason.startswith(
        f"permanent failure: delivered 3 times to consumer group '{GROUP}' of stream "
        f"'{stream}' without an acknowledgement; last consumer 'refunds-1'"
    )

    redriven(desk)

    received = _read(client, stream, "refunds-2")
    assert len(received) == COUNT
    assert _read(client, stream, "refunds-2") == []  # once each
    by_id = {dict(fields)[b"antidote-message-id"].decode(): fields for _, fields in received}
    assert sorted(by_id) == sorted(f"redis-{stream}-{i}" for i in ids)
    for n, entry_id in enumerate(ids):
        fields = by_id[f"redis-{stream}-{entry_id}"]
        assert fields == [
            *_fields(n),
            (b"antidote-message-id", f"redis-{stream}-{entry_id}".encode()),
        ]
    assert {desk.state(f"redis-{stream}-{i}")["state"] for i in ids} == {"DLVD"}
