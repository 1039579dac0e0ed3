"""`manage.py consume_sources` SIGKILLed in the middle of draining a few thousand messages
JetStream gave up on, then started again: the advisories it had fetched and not acknowledged come
back once their `ack_wait` has passed, ingest stores them once, and in the end every message is
in the lake exactly once and no advisory waits."""

import pytest

from tests.brokers.killed_mid_drain import COUNT, killed_mid_drain, processes  # noqa: F401 (fixtures)
from tests.brokers.nats.conftest import SHARED_URL, source_config
from workers.brokers.nats import source as N

pytestmark = [pytest.mark.services, pytest.mark.slow]

URL_ENV = "KILLED_NATS_URL"


def test_a_consumer_killed_mid_drain_and_started_again_stores_every_message_exactly_once(
    killed_mid_drain,  # noqa: F811
    client,
    tag,
):
    stream, capture = f"ORDERS_{tag}", f"ANTIDOTE_ADVISORIES_ORDERS_{tag}"
    client.add_stream(stream, [f"orders.{tag}.>"])
    client.made += [stream, capture]
    options = {"ack_wait": 2}
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

    killed_mid_drain(
        url=SHARED_URL,
        name="orders-nats",
        kind="nats",
        url_env=URL_ENV,
        stream=stream,
        options=options,
        drained=lambda: client.stream_info(capture).state.messages == 0,
    )
