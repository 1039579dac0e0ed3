"""The whole loop on the real NATS server: a consumer keeps failing messages until JetStream
gives up on them, the source (through the consumer loop every broker shares) drains them into
Antidote, the intake handler quarantines each with the consumer's reason, and an approved
"reprocess to its origin" publishes them back to their subject, where a consumer gets each once,
body and headers as the publisher sent them."""

import nats.errors
import pytest
from nats.js import api

from console.ingest.models import MessageKey
from tests.brokers.nats.conftest import source_config
from tests.brokers.sources import drained_until, intake_quarantined, redriven, round_trip_load
from tests.decisions.desk import make_desk
from workers.brokers.nats import source as N

pytestmark = pytest.mark.services

COUNT = 12
SINK = "workers.brokers.nats.publisher"


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


def _headers(n):
    return {"X-Tenant": "acme", "X-Attempt": str(n), "Content-Type": "application/json"}


def _body(n):
    return b'{"refund": %d, "amount": "12,50"}\n\x00\xfe' % n


def test_a_message_its_consumer_keeps_failing_comes_back_to_its_subject_once_and_unchanged(
    desk, client, tag, shared_url, monkeypatch
):
    monkeypatch.setenv("ROUND_TRIP_NATS_URL", shared_url)
    stream = f"REFUNDS_{tag}"
    capture = f"ANTIDOTE_ADVISORIES_{stream}"
    client.add_stream(stream, [f"refunds.{tag}.>"])
    client.made += [stream, capture]
    options = {"consumer": "refunds", "remove": True}
    round_trip_load(
        name="refunds-nats",
        kind="nats",
        url_env="ROUND_TRIP_NATS_URL",
        stream=stream,
        sink=SINK,
        options=options,
    )
    # The source's first run creates the capture stream; the failures happen while it is down.
    N.CONNECTOR.open(source_config(shared_url, stream, name="refunds-nats", **options)).close()

    worker = client.worker(stream, "refunds", max_deliver=3)
    for n in range(COUNT):
        client.publish(f"refunds.{tag}.requested", _body(n), headers=_headers(n))
    client.fail_until_given_up(worker)

    drained_until(
        "refunds-nats",
        into="refunds-dead",
        count=COUNT,
        done=lambda: client.stream_info(capture).state.messages == 0,
    )
    # remove: true: stored, then deleted from the stream.
    assert client.stream_info(stream).state.messages == 0

    # Delivered once to the intake handler: quarantined with the consumer's reason.
    quarantined = intake_quarantined(desk, count=COUNT)
    row = quarantined.get(message_id__startswith=f"nats-{stream}-4-")
    assert row.exception_type == "nats.max_deliver"
    assert row.reason.startswith(
        f"permanent failure: max deliveries reached: consumer 'refunds' of stream '{stream}' "
        "gave up after delivering it 3 times"
    )

    # The refunds service is fixed: a new consumer, for what comes from now on.
    fixed = client.run(
        client.js.pull_subscribe(
            f"refunds.{tag}.>",
            durable="refunds-fixed",
            stream=stream,
            config=api.ConsumerConfig(deliver_policy=api.DeliverPolicy.NEW),
        )
    )
    redriven(desk)

    received = []
    while True:
        try:
            received += client.run(fixed.fetch(100, timeout=1))
        except (TimeoutError, nats.errors.TimeoutError):
            break
    assert len(received) == COUNT  # once each
    by_attempt = {}
    for msg in received:
        assert msg.subject == f"refunds.{tag}.requested"
        headers = dict(msg.headers)
        assert headers.pop("Nats-Msg-Id").startswith(f"antidote:nats-{stream}-")
        by_attempt[headers["X-Attempt"]] = (msg.data, headers)
    assert by_attempt == {str(n): (_body(n), _headers(n)) for n in range(COUNT)}
    ids = MessageKey.objects.filter(queue="refunds-dead").values_list("message_id", flat=True)
    assert {desk.state(i)["state"] for i in ids} == {"DLVD"}
