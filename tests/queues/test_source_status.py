"""What a broker source's consumer reports, where people and machines read it: the queues page
and `GET /api/v1/stats`; and the request screen's offer to send messages back where they died."""

from datetime import timedelta

import pytest
from django.utils import timezone

from console.queues.models import BrokerSource
from console.queues.selectors import NOT_RUNNING, source_status_list
from console.queues.services import queues_load
from console.queues.sources import (
    INTAKE_HANDLER,
    REDRIVE_HANDLER,
    source_drained,
    source_state_set,
)
from console.readmodels.models import MessageIndex

pytestmark = pytest.mark.django_db

FILE = {
    "queues": [
        {"name": "orders-dead", "handler": INTAKE_HANDLER},
        {"name": "orders-redrive", "handler": REDRIVE_HANDLER},
    ],
    "sources": [
        {
            "name": "orders-dlq",
            "broker_queue": "orders.dlq",
            "queue": "orders-dead",
            "redrive_queue": "orders-redrive",
        }
    ],
}


@pytest.fixture
def source(db):
    queues_load(data=FILE)
    return BrokerSource.objects.get()


def test_a_consumer_that_is_down_says_why_and_when_it_retries(source, client, personas):
    retry = timezone.now() + timedelta(seconds=8)
    source_state_set(
        name="orders-dlq",
        state="down",
        error="RabbitMQ at 127.0.0.1:5672/ does not answer: connection refused",
        retry_at=retry,
    )
    source_drained(name="orders-dlq", accepted=40, refused=2)
    client.force_login(personas["viewer"])

    page = client.get("/queues/").content.decode()
    stats = client.get("/api/v1/stats").json()["sources"]

    assert 'id="source-orders-dlq"' in page
    assert "does not answer: connection refused" in page and "retrying <time" in page
    (shown,) = stats
    assert (shown["state"], shown["drained"], shown["refused"]) == ("down", 40, 2)
    assert shown["last_error"].startswith("RabbitMQ at 127.0.0.1:5672/")
    assert shown["broker_queue"] == "orders.dlq" and shown["redrive_queue"] == "orders-redrive"


def test_a_consumer_without_a_recent_heartbeat_is_shown_as_not_running(source):
    source_state_set(name="orders-dlq", state="consuming")
    later = timezone.now() + timedelta(minutes=5)

    assert source_status_list()[0].state == "consuming"
    assert source_status_list(now=later)[0].state == NOT_RUNNING


def test_the_request_screen_offers_the_way_back_only_for_messages_from_a_source(
    source, client, personas
):
    now = timezone.now()
    for message_id, queue in (("dead-1", "orders-dead"), ("other-1", "orders-redrive")):
        MessageIndex.objects.create(
            message_id=message_id,
            queue=queue,
            original_queue=queue,
            state="NDLV",
            delivery_count=1,
            reason="rejected by a consumer of queue 'orders'",
            body_path="messages/x",
            enqueued_at=now,
            updated_at=now,
        )
    client.force_login(personas["operator"])

    offered = client.get("/requests/new?scope=message&id=dead-1").content.decode()
    chosen = client.get(
        "/requests/new?scope=message&id=dead-1&action=reprocess&target_queue=orders-redrive"
    ).content.decode()
    elsewhere = client.get("/requests/new?scope=message&id=other-1").content.decode()

    assert "Reprocess to its original RabbitMQ queue" in offered
    assert "back to its original RabbitMQ queue (source orders-dlq)" in offered
    assert '<option value="orders-redrive" selected>' in chosen
    assert "Reprocess to its original RabbitMQ queue" not in elsewhere


def test_the_page_and_the_stats_show_a_sources_kind_lag_and_where_it_is_connected(
    source, client, personas
):
    source_state_set(
        name="orders-dlq", state="consuming", where="RabbitMQ at 127.0.0.1:5672, vhost '/'"
    )
    source_drained(name="orders-dlq", accepted=5, refused=0, lag=1234)
    client.force_login(personas["viewer"])

    page = client.get("/queues/").content.decode()
    (shown,) = client.get("/api/v1/stats").json()["sources"]

    row = page[page.index('id="source-orders-dlq"') :]
    row = row[: row.index("</tr>")]
    assert '<span class="muted source-kind">RabbitMQ</span>' in row
    assert '<td class="source-lag">1234 <span class="muted">as of' in row
    assert "connected to RabbitMQ at 127.0.0.1:5672, vhost &#x27;/&#x27;" in row
    assert (shown["kind"], shown["kind_title"], shown["lag"]) == ("rabbitmq", "RabbitMQ", 1234)
    assert shown["lag_at"] is not None
    assert shown["connected_to"] == "RabbitMQ at 127.0.0.1:5672, vhost '/'"
    assert shown["parking"] == "orders.dlq.antidote-refused"


def test_a_lag_the_broker_did_not_give_keeps_the_last_one_it_gave(source):
    source_drained(name="orders-dlq", accepted=1, refused=0, lag=7)
    source_drained(name="orders-dlq", accepted=1, refused=0, lag=None)

    (shown,) = source_status_list()
    assert (shown.lag, shown.drained) == (7, 2)


def test_a_source_whose_lag_is_not_known_yet_says_so_in_words(source, client, personas):
    client.force_login(personas["viewer"])

    page = client.get("/queues/").content.decode()

    assert '<td class="source-lag"><span class="muted">not known yet</span></td>' in page
