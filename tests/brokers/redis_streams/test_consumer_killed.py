"""`manage.py consume_sources` SIGKILLed in the middle of draining a few thousand poison entries,
then started again: the entries it had claimed and not acknowledged are still pending under
Antidote's consumer, the next one takes them back first, ingest stores them once, and in the end
every entry is in the lake exactly once and nothing is pending."""

import signal
import time
from collections import Counter

import pytest

from console.ingest.models import MessageKey
from console.queues.models import BrokerSource
from console.queues.services import queues_load
from console.queues.sources import INTAKE_HANDLER
from tests.brokers.redis_streams.conftest import SHARED_URL, URL_ENV
from tests.ingest.conftest import lake_events, lake_messages
from tests.processes.conftest import processes, wait_for  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.services, pytest.mark.slow]

N = 3000
BATCH = 50
GROUP = "billing"
MANAGE = ("manage.py", "consume_sources")  # as the Procfile starts it


def _stored(queue):
    return MessageKey.objects.filter(queue=queue).count()


def test_a_consumer_killed_mid_drain_and_started_again_stores_every_entry_exactly_once(
    processes,  # noqa: F811
    streams,
    tmp_path,
):
    client, stream = streams.client, streams.key("orders")
    client.xgroup_create(stream, GROUP, id="$", mkstream=True)
    pipe = client.pipeline(transaction=False)
    for i in range(N):
        pipe.xadd(stream, {"body": f"order {i}"})
    pipe.execute()
    # The group's consumer fails on every one, twice.
    client.xreadgroup(GROUP, "worker-1", {stream: ">"}, count=N)
    client.xreadgroup(GROUP, "worker-1", {stream: "0"}, count=N)
    queues_load(
        data={
            "queues": [{"name": "orders-dead", "handler": INTAKE_HANDLER}],
            "sources": [
                {
                    "name": "orders-stream",
                    "kind": "redis",
                    "url_env": URL_ENV,
                    "broker_queue": stream,
                    "queue": "orders-dead",
                    "batch_size": BATCH,
                    "prefetch": 2 * BATCH,
                    "options": {"group": GROUP, "min_deliveries": 2, "min_idle_ms": 50},
                }
            ],
        }
    )
    source = BrokerSource.objects.get(name="orders-stream")
    env = {URL_ENV: SHARED_URL}
    command = (*MANAGE, "--source", source.name)

    started = time.monotonic()
    first = processes.start(*command, log=tmp_path / "first.log", env=env)
    # Killed as soon as a few batches are in: SIGKILL, with a batch claimed and not acknowledged.
    while _stored("orders-dead") < 200:
        assert first.poll() is None, (tmp_path / "first.log").read_text()
        assert time.monotonic() - started < 120, "the first consumer stored nothing"
        time.sleep(0.01)
    processes.kill(first)
    killed_at = _stored("orders-dead")
    assert 200 <= killed_at < N, f"the kill came too late: {killed_at} stored"
    held = Counter(c for c, _ in streams.pending(stream, GROUP).values())
    assert held["worker-1"] > 0, "the kill came after every entry was claimed"
    print(f"{killed_at} stored before the kill; {held['antidote']} claimed and not acknowledged")

    second = processes.start(*command, log=tmp_path / "second.log", env=env)
    wait_for(lambda: _stored("orders-dead") == N, timeout=300, what="every entry to be stored")
    wait_for(lambda: not client.xpending(stream, GROUP)["pending"], timeout=60, what="the acks")
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=30) == 0

    ids = [m for m, row in lake_messages().items() if row["queue"] == "orders-dead"]
    assert len(ids) == N
    per_message = Counter(e["message_id"] for e in lake_events() if e["queue"] == "orders-dead")
    assert set(per_message.values()) == {1}  # one TBDL each: nothing ingested twice
    assert len(per_message) == N
    source = BrokerSource.objects.get(pk=source.pk)
    assert source.drained >= N - BATCH
    assert (source.refused, source.state) == (0, "stopped")
