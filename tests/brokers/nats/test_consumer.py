"""A NATS source through the consumer loop every broker shares (console.ingest.consumers):
messages JetStream gave up on drained into the lake once each with their origin, one whose
message was deleted parked with its reason, and a link that breaks after the lake commit and
before its acknowledgement losing nothing and storing nothing twice."""

import json
import time

import nats.errors
import pytest

from console.ingest.models import MessageKey
from tests.brokers.sources import consumed_until, consuming, source_load
from tests.ingest.conftest import lake_messages
from tests.processes.conftest import wait_for
from workers.brokers.base import SourceConfig
from workers.brokers.nats import source as N

pytestmark = pytest.mark.services


@pytest.fixture
def orders(client, tag, shared_url, monkeypatch):
    stream = f"ORDERS_{tag}"
    client.add_stream(stream, [f"orders.{tag}.>"])
    client.made += [stream, f"ANTIDOTE_ADVISORIES_{stream}", f"REFUSED_{tag}"]
    monkeypatch.setenv("TEST_NATS_URL", shared_url)
    return stream


def _source(stream, tag, **options):
    return source_load(
        name="orders-nats",
        kind="nats",
        url_env="TEST_NATS_URL",
        stream=stream,
        batch_seconds=0.2,
        options={"parking_stream": f"REFUSED_{tag}", **options},
    )


def _capture(client, stream):
    """Create the capture stream as a first run of the source would."""
    link = N.CONNECTOR.open(
        SourceConfig(
            name="orders-nats",
            kind="nats",
            url_env="TEST_NATS_URL",
            url="nats://127.0.0.1:4222",
            drained=stream,
            into="orders-dead",
            prefetch=100,
            batch_size=4,
        )
    )
    link.close()


def test_it_drains_given_up_messages_once_each_and_parks_one_whose_message_is_gone(
    client, orders, tag, transactional_db, lake_root
):
    source = _source(orders, tag, remove=True)
    _capture(client, orders)
    worker = client.worker(orders, "billing", max_deliver=2)
    for i in range(9):
        client.publish(
            f"orders.{tag}.created", json.dumps({"order": i}).encode(), {"X-Tenant": "acme"}
        )
    client.publish(f"orders.{tag}.created", b"deleted before the drain")
    client.fail_until_given_up(worker)
    client.delete_msg(orders, 10)

    source, last_error, said = consumed_until(source, drained=9, refused=1)
    assert (source.drained, source.refused) == (9, 1)
    assert f"set aside in stream REFUSED_{tag}, subject antidote.refused.orders-nats" in last_error
    assert "message 10 is no longer in stream" in last_error
    assert said[:3] == [f"{source.name}: {s}" for s in ("starting", "connecting", "consuming")]
    keys = set(MessageKey.objects.values_list("message_id", flat=True))
    assert len(keys) == 9
    assert all(key.startswith(f"nats-{orders}-") for key in keys)
    rows = [json.loads(row["headers"]) | {"body": row["body"]} for row in lake_messages().values()]
    fifth = next(r for r in rows if r["body"] == b'{"order": 4}')
    assert (fifth["X-Tenant"], fifth["nats-sequence"], fifth["nats-deliveries"]) == (
        "acme",
        "5",
        "2",
    )
    assert fifth["nats-subject"] == f"orders.{tag}.created"
    # Stored, acknowledged, then removed from the stream (remove: true).
    assert client.stream_info(orders).state.messages == 0
    (parked,) = client.read_all(f"REFUSED_{tag}")
    assert json.loads(parked.data)["stream_seq"] == 10


def test_a_link_broken_after_the_lake_commit_loses_nothing_and_stores_nothing_twice(
    client, orders, tag, transactional_db, lake_root, monkeypatch
):
    # Advisories not acknowledged come back after a second, not two minutes.
    monkeypatch.setattr(N, "ACK_WAIT", 1.0)
    monkeypatch.setattr("console.ingest.consumers.backoff_seconds", lambda attempt: 0.1)
    source = _source(orders, tag)
    _capture(client, orders)
    worker = client.worker(orders, "billing", max_deliver=1)
    for i in range(10):
        client.publish(f"orders.{tag}.created", f"order {i}".encode())
    client.fail_until_given_up(worker)
    acknowledge = N.NatsSourceLink.ack
    broken = []

    def ack_once_broken(self, deliveries):
        if not broken:
            # The batch is in the lake; the connection dies before JetStream hears of it.
            broken.append(len(deliveries))
            self._run(self.nc.close())
            raise nats.errors.ConnectionClosedError
        acknowledge(self, deliveries)

    monkeypatch.setattr(N.NatsSourceLink, "ack", ack_once_broken)

    with consuming(source) as said:
        wait_for(
            lambda: client.stream_info(f"ANTIDOTE_ADVISORIES_{orders}").state.messages == 0,
            timeout=60,
            what="every acknowledgement",
        )
        time.sleep(0.5)

    assert broken
    assert any(": down (" in line for line in said)
    assert MessageKey.objects.count() == 10
    assert sorted(row["body"] for row in lake_messages().values()) == [
        f"order {i}".encode() for i in range(10)
    ]
