"""A Redis source through the consumer loop every broker shares (console.ingest.consumers):
entries drained into the lake once each, a malformed one parked with its reason, and a link that
breaks after the lake commit and before its acknowledgement losing nothing and storing nothing
twice."""

import json
import time

import pytest

from console.ingest.models import MessageKey
from tests.brokers.redis_streams.conftest import URL_ENV
from tests.brokers.sources import consumed_until, consuming, source_load, source_now
from tests.ingest.conftest import lake_messages
from tests.processes.conftest import wait_for
from workers.brokers.redis_streams.source import RedisStreamsSourceLink as RedisStreamsLink

pytestmark = pytest.mark.services

GROUP = "billing"


def _source(stream, **options):
    return source_load(
        name="orders-stream",
        kind="redis",
        url_env=URL_ENV,
        stream=stream,
        batch_seconds=0.2,
        options={"group": GROUP, "min_deliveries": 2, "min_idle_ms": 50, **options},
    )


def test_it_drains_poison_entries_once_each_and_parks_a_malformed_one(
    streams, transactional_db, lake_root
):
    stream = streams.key("orders")
    ids = [
        streams.poisoned(
            stream, GROUP, {"body": json.dumps({"order": i}), "tenant": "acme"}, reads=2
        )
        for i in range(9)
    ]
    healthy = streams.poisoned(stream, GROUP, {"body": "still being tried"}, reads=1)
    malformed = streams.poisoned(stream, GROUP, {"blob": b"\xff"}, reads=2)
    source = _source(stream, delete=True)

    source, last_error, said = consumed_until(source, drained=9, refused=1)
    assert (source.drained, source.refused) == (9, 1)
    assert f"set aside in {stream}:antidote-refused; latest: could not be read" in last_error
    assert said[:3] == [f"{source.name}: {s}" for s in ("starting", "connecting", "consuming")]
    keys = set(MessageKey.objects.values_list("message_id", flat=True))
    assert keys == {f"redis-{stream}-{i}" for i in ids}
    row = lake_messages()[f"redis-{stream}-{ids[4]}"]
    assert row["body"] == b'{"order": 4}'
    headers = json.loads(row["headers"])
    assert (headers["tenant"], headers["redis-deliveries"]) == ("acme", "2")
    # Acknowledged and, with delete, gone; the healthy entry is still its consumer's.
    assert streams.pending(stream, GROUP) == {healthy: ("worker-1", 1)}
    assert [i.decode() for i, _ in streams.client.xrange(stream)] == [healthy]
    ((_, parked),) = streams.client.xrange(stream + ":antidote-refused")
    assert parked[b"blob"] == b"\xff"
    assert parked[b"antidote-refused-entry-id"] == malformed.encode()
    assert b"is not UTF-8 text" in parked[b"antidote-refused-reason"]


def test_a_link_broken_after_the_lake_commit_loses_nothing_and_stores_nothing_twice(
    streams, transactional_db, lake_root, monkeypatch
):
    stream = streams.key("orders")
    ids = [streams.poisoned(stream, GROUP, {"body": f"order {i}"}, reads=2) for i in range(10)]
    source = _source(stream)
    acknowledge = RedisStreamsLink.ack
    broken = []

    def ack_once_broken(self, deliveries):
        if not broken:
            # The batch is in the lake; the connection dies before Redis hears of it.
            broken.append([d.raw.entry_id for d in deliveries])
            self.client.close()
            raise ConnectionError("connection lost before the acknowledgement")
        acknowledge(self, deliveries)

    monkeypatch.setattr(RedisStreamsLink, "ack", ack_once_broken)
    monkeypatch.setattr("console.ingest.consumers.backoff_seconds", lambda attempt: 0.1)

    with consuming(source) as said:
        wait_for(lambda: not streams.pending(stream, GROUP), timeout=60, what="every ack")
        time.sleep(0.5)

    assert broken and set(broken[0]) < set(ids)
    assert any(": down (" in line for line in said)
    assert MessageKey.objects.count() == len(ids)
    assert set(MessageKey.objects.values_list("message_id", flat=True)) == {
        f"redis-{stream}-{i}" for i in ids
    }
    assert len(lake_messages()) == len(ids)
    # The broken batch came back after the reconnection and was taken for what it was.
    assert source_now(source).drained >= len(ids)
