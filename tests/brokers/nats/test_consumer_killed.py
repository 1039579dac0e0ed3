"""`manage.py consume_sources` SIGKILLed in the middle of draining a few thousand messages
JetStream gave up on, then started again: the advisories it had fetched and not acknowledged come
back once their `ack_wait` has passed, ingest stores them once, and in the end every message is
in the lake exactly once and no advisory waits."""

import pytest

from tests.brokers.nats.conftest import SHARED_URL, source_config
from tests.brokers.sources import assert_stored_once_each, killed_and_started_again, source_load
from tests.processes.conftest import processes  # noqa: F401 (the fixture)
from workers.brokers.nats import source as N

pytestmark = [pytest.mark.services, pytest.mark.slow]

COUNT = 3000
BATCH = 50
URL_ENV = "KILLED_NATS_URL"


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
    source = source_load(
        name="orders-nats",
        kind="nats",
        url_env=URL_ENV,
        stream=stream,
        options=options,
        batch_size=BATCH,
        prefetch=2 * BATCH,
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

    killed_and_started_again(
        processes,
        source,
        env={URL_ENV: SHARED_URL},
        logs=tmp_path,
        count=COUNT,
        drained=lambda: client.stream_info(capture).state.messages == 0,
    )
    assert_stored_once_each(COUNT)
    source.refresh_from_db()
    assert (source.refused, source.state) == (0, "stopped")
