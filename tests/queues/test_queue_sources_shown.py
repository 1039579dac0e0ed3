"""Where each queue's messages come from (issue 45), on the queues page and in GET /api/v1/queues:
its broker sources as configured (RabbitMQ, NATS JetStream, Redis Streams, with what each
drains), then the other ways messages came in as ingest noted them (the API, by hand, the inbox
folder), in plain titles, read in a fixed number of queries whatever the number of queues."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from console.queues.models import BrokerSource, Queue, QueueIntake
from console.queues.selectors import queue_overview
from console.queues.services import queue_intake_record
from tests.browse.conftest import api, login

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def queues(db):
    """orders, drained from RabbitMQ and sent into through the API; invoices, from NATS and
    Redis; refunds, from the inbox folder only; audit, from nowhere yet."""
    made = {
        name: Queue.objects.create(name=name, handler="workers.demo.handlers.noop")
        for name in ("orders", "invoices", "refunds", "audit")
    }
    for name, kind, drained, queue in (
        ("orders-dlq", "rabbitmq", "orders.dlq", "orders"),
        ("invoices-js", "nats", "INVOICES_DLQ", "invoices"),
        ("invoices-rs", "redis", "invoices:dead", "invoices"),
    ):
        BrokerSource.objects.create(
            name=name, kind=kind, url_env="BROKER_URL", broker_queue=drained, queue=made[queue]
        )
    queue_intake_record(queues={"orders"}, source="api:shop", at=T0)
    queue_intake_record(queues={"refunds"}, source="inbox:refunds.jsonl", at=T0)
    return made


def _titles(overview):
    return {q.name: [s.title for s in q.sources] for q in overview}


def test_each_queue_says_where_its_messages_come_from_in_plain_titles(queues):
    assert _titles(queue_overview()) == {
        "orders": ["RabbitMQ", "API"],
        "invoices": ["NATS JetStream", "Redis Streams"],
        "refunds": ["inbox folder"],
        "audit": [],
    }


def test_a_broker_source_says_what_it_drains(queues):
    (orders,) = [q for q in queue_overview() if q.name == "orders"]

    assert orders.sources[0].detail == "orders.dlq (source orders-dlq)"
    assert (orders.sources[1].detail, orders.sources[1].last_at) == ("", T0)


def test_a_route_noted_again_keeps_its_first_time_and_moves_its_last(queues):
    later = T0 + timedelta(hours=1)

    queue_intake_record(queues={"orders", "audit"}, source="api:shop", at=later)

    rows = QueueIntake.objects.filter(route="api").order_by("queue")
    assert [(r.queue, r.first_at, r.last_at) for r in rows] == [
        ("audit", later, later),
        ("orders", T0, later),
    ]


def test_a_broker_sources_own_ingest_is_not_said_twice_and_unknown_senders_are_not_noted(
    queues,
):
    queue_intake_record(queues={"orders"}, source="rabbitmq:orders-dlq", at=T0)
    queue_intake_record(queues={"audit"}, source="something:else", at=T0)

    titles = _titles(queue_overview())

    assert titles["orders"] == ["RabbitMQ", "API"]
    assert titles["audit"] == []
    assert not QueueIntake.objects.filter(route="something").exists()


def test_the_page_and_the_api_show_them(queues, personas):
    page = login(personas["viewer"]).get("/queues/").content.decode()
    answer = api(personas["viewer"]).get("/api/v1/queues").json()["results"]

    row = page[page.index('href="/messages/?queue=orders"') :]
    row = row[: row.index("</tr>")]
    assert '<span class="pill" title="drains orders.dlq (source orders-dlq)">RabbitMQ</span>' in row
    assert '<span class="pill">API</span> <span class="muted">last <time' in row
    assert "rabbitmq" not in row.replace("RabbitMQ", "")
    assert "not known yet" in page[page.index('href="/messages/?queue=audit"') :]
    by_name = {q["name"]: q["sources"] for q in answer}
    assert by_name["orders"] == [
        {"title": "RabbitMQ", "detail": "orders.dlq (source orders-dlq)", "last_at": None},
        {"title": "API", "detail": "", "last_at": "2026-03-01T12:00:00Z"},
    ]
    assert [s["title"] for s in by_name["invoices"]] == ["NATS JetStream", "Redis Streams"]
    assert by_name["audit"] == []


def test_the_sources_cost_the_same_queries_for_four_queues_as_for_forty(queues):
    def queries():
        with CaptureQueriesContext(connection) as run:
            queue_overview()
        return len(run.captured_queries)

    few = queries()
    for i in range(36):
        queue = Queue.objects.create(name=f"more-{i}", handler="workers.demo.handlers.noop")
        BrokerSource.objects.create(
            name=f"more-{i}-dlq", kind="rabbitmq", url_env="X", broker_queue="q", queue=queue
        )
        queue_intake_record(queues={queue.name}, source="api:shop", at=T0)

    assert queries() == few


def test_messages_sent_through_the_api_make_the_queue_say_api(queues, personas, lake_root):
    sent = api(personas["application"]).post(
        "/api/v1/messages", {"id": "m-1", "queue": "audit", "body": "hi"}, format="json"
    )

    assert sent.status_code == 201
    assert _titles(queue_overview())["audit"] == ["API"]
