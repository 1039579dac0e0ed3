"""`manage.py consume_sources` SIGKILLed in the middle of draining a few thousand messages
JetStream gave up on, then started again: the advisories it had fetched and not acknowledged come
back once their `ack_wait` has passed, ingest stores them once, and in the end every message is
in the lake exactly once and no advisory waits."""

import signal
import time
from collections import Counter

import pytest

from console.ingest.models import MessageKey
from console.queues.models import BrokerSource
from console.queues.services import queues_load
from console.queues.sources import INTAKE_HANDLER
from tests.brokers.nats.conftest import SHARED_URL, source_config
from tests.ingest.conftest import lake_events, lake_messages
from tests.processes.conftest import processes, wait_for  # noqa: F401 (the fixture)
from workers.brokers import nats as N

pytestmark = [pytest.mark.services, pytest.mark.slow]

COUNT = 3000
BATCH = 50
URL_ENV = "KILLED_NATS_URL"
MANAGE = ("manage.py", "consume_sources")  # as the Procfile starts it


def _stored(queue):
    return MessageKey.objects.filter(queue=queue).count()


def test_a_consumer_killed_mid_drain_and_started_again_stores_every_message_exactly_once(
    processes,  # noqa: F811
    client,
    tag,
    tmp_path,
):
    stream, capture = f"ORDERS_{tag}", f"ANTIDOTE_ADVISORIES_ORDERS_{tag}"
    client.add_stream(stream, [f"orders.{tag}.>"])
    client.made += [stream, capture]
    options = {"ack_wait": 2}
    queues_load(
        data={
            "queues": [{"name": "orders-dead", "handler": INTAKE_HANDLER}],
            "sources": [
                {
                    "name": "orders-nats",
                    "kind": "nats",
                    "url_env": URL_ENV,
                    "broker_queue": stream,
                    "queue": "orders-dead",
                    "batch_size": BATCH,
                    "prefetch": 2 * BATCH,
                    "options": options,
                }
            ],
        }
    )
    # The source ran once before: its capture stream holds what follows.
    N.CONNECTOR.open(source_config(SHARED_URL, stream, name="orders-nats", **options)).close()
    worker = client.worker(stream, "billing", max_deliver=1)

    async def publish():
        for i in range(COUNT):
            await client.js.publish_async(f"orders.{tag}.created", f"order {i}".encode())
        await client.js.publish_async_completed()

    client.run(publish(), timeout=60)
    client.fail_until_given_up(worker)
    assert client.stream_info(capture).state.messages == COUNT

    source = BrokerSource.objects.get(name="orders-nats")
    env = {URL_ENV: SHARED_URL}
    command = (*MANAGE, "--source", source.name)
    started = time.monotonic()
    first = processes.start(*command, log=tmp_path / "first.log", env=env)
    # Killed as soon as a few batches are in: SIGKILL, with advisories fetched and not acknowledged.
    while _stored("orders-dead") < 200:
        assert first.poll() is None, (tmp_path / "first.log").read_text()
        assert time.monotonic() - started < 120, "the first consumer stored nothing"
        time.sleep(0.01)
    processes.kill(first)
    killed_at = _stored("orders-dead")
    assert 200 <= killed_at < COUNT, f"the kill came too late: {killed_at} stored"
    print(f"{killed_at} stored before the kill")

    second = processes.start(*command, log=tmp_path / "second.log", env=env)
    wait_for(lambda: _stored("orders-dead") == COUNT, timeout=300, what="every message stored")
    wait_for(
        lambda: client.stream_info(capture).state.messages == 0,
        timeout=60,
        what="every advisory acknowledged",
    )
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=30) == 0

    ids = [m for m, row in lake_messages().items() if row["queue"] == "orders-dead"]
    assert len(ids) == COUNT
    per_message = Counter(e["message_id"] for e in lake_events() if e["queue"] == "orders-dead")
    assert set(per_message.values()) == {1}  # one TBDL each: nothing ingested twice
    assert len(per_message) == COUNT
    source = BrokerSource.objects.get(pk=source.pk)
    assert (source.refused, source.state) == (0, "stopped")
