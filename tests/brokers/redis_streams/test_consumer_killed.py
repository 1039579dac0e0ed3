"""`manage.py consume_sources` SIGKILLed in the middle of draining a few thousand poison entries,
then started again: the entries it had claimed and not acknowledged are still pending under
Antidote's consumer, the next one takes them back first, ingest stores them once, and in the end
every entry is in the lake exactly once and nothing is pending."""

from collections import Counter

import pytest

from tests.brokers.killed_mid_drain import BATCH, COUNT, killed_mid_drain, processes  # noqa: F401 (fixtures)
from tests.brokers.redis_streams.conftest import SHARED_URL, URL_ENV

pytestmark = [pytest.mark.services, pytest.mark.slow]

GROUP = "billing"


def test_a_consumer_killed_mid_drain_and_started_again_stores_every_entry_exactly_once(
    killed_mid_drain,  # noqa: F811
    streams,
):
    client, stream = streams.client, streams.key("orders")
    client.xgroup_create(stream, GROUP, id="$", mkstream=True)
    pipe = client.pipeline(transaction=False)
    for i in range(COUNT):
        pipe.xadd(stream, {"body": f"order {i}"})
    pipe.execute()
    # The group's consumer fails on every one, twice.
    client.xreadgroup(GROUP, "worker-1", {stream: ">"}, count=COUNT)
    client.xreadgroup(GROUP, "worker-1", {stream: "0"}, count=COUNT)

    def claimed_not_acknowledged():
        held = Counter(c for c, _ in streams.pending(stream, GROUP).values())
        assert held["worker-1"] > 0, "the kill came after every entry was claimed"
        print(f"{held['antidote']} claimed and not acknowledged")

    source = killed_mid_drain(
        url=SHARED_URL,
        name="orders-stream",
        kind="redis",
        url_env=URL_ENV,
        stream=stream,
        options={"group": GROUP, "min_deliveries": 2, "min_idle_ms": 50},
        drained=lambda: not client.xpending(stream, GROUP)["pending"],
        after_kill=claimed_not_acknowledged,
    )
    assert source.drained >= COUNT - BATCH  # refreshed by killed_and_started_again
