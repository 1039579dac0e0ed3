"""Dead letters arriving by any route (here the API's ingest service) into a queue whose handler
is the dead-letter intake: each is delivered once and quarantined with the failure its headers
record, which the failure groups, the message page and the API then show."""

import json

import pytest

from console.readmodels.models import FailureGroup, MessageIndex
from tests.decisions.desk import make_desk
from workers.brokers.intake import NO_RECORD_TYPE

KAFKA_CONNECT = {
    "__connect.errors.topic": "orders",
    "__connect.errors.partition": "3",
    "__connect.errors.offset": "1234",
    "__connect.errors.connector.name": "jdbc-sink",
    "__connect.errors.task.id": "0",
    "__connect.errors.stage": "VALUE_CONVERTER",
    "__connect.errors.class.name": "org.apache.kafka.connect.json.JsonConverter",
    "__connect.errors.exception.class.name": "org.apache.kafka.connect.errors.DataException",
    "__connect.errors.exception.message": "Converting byte[] to Kafka Connect data failed",
    "__connect.errors.exception.stacktrace": "org.apache.kafka.connect.errors.DataException: "
    "Converting byte[] to Kafka Connect data failed\n\tat JsonConverter.toConnectData",
}
SPRING = {
    "kafka_dlt-original-topic": "payments",
    "kafka_dlt-original-partition": "0",
    "kafka_dlt-original-offset": "77",
    "kafka_dlt-original-timestamp": "1790000000000",
    "kafka_dlt-original-consumer-group": "billing",
    "kafka_dlt-exception-fqcn": (
        "org.springframework.kafka.listener.ListenerExecutionFailedException"
    ),
    "kafka_dlt-exception-cause-fqcn": "java.lang.IllegalStateException",
    "kafka_dlt-exception-message": "<script>alert(1)</script> amount missing",
    "kafka_dlt-exception-stacktrace": "java.lang.IllegalStateException: amount missing",
}


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    desk = make_desk(spark, personas, settings)
    desk.queue("dead", handler="workers.brokers.intake.dead_letter")
    return desk


def _client(desk, who="operator"):
    from django.test import Client

    client = Client()
    client.force_login(desk.personas[who])
    return client


def test_kafka_dead_letters_are_quarantined_with_the_exception_their_headers_record(desk):
    desk.ingest("dead", {f"connect-{i}": b"{bad json" for i in range(3)}, headers=KAFKA_CONNECT)
    desk.ingest("dead", {"spring-1": b"{}"}, headers=SPRING)
    desk.ingest("dead", {"plain-1": b"{}"})
    desk.deliver_until_idle()
    desk.refresh()

    rows = {r.message_id: r for r in MessageIndex.objects.filter(queue="dead")}
    assert {r.state for r in rows.values()} == {"NDLV"}
    assert {r.delivery_count for r in rows.values()} == {1}
    connect = rows["connect-0"]
    assert connect.exception_type == "org.apache.kafka.connect.errors.DataException"
    assert connect.reason == "permanent failure: Converting byte[] to Kafka Connect data failed"
    assert rows["spring-1"].exception_type == (
        "org.springframework.kafka.listener.ListenerExecutionFailedException"
    )
    assert rows["plain-1"].exception_type == NO_RECORD_TYPE
    # One group for the three Kafka Connect failures, keyed on what went wrong in Kafka.
    group = FailureGroup.objects.get(fingerprint=connect.group_id)
    assert group.count == 3
    assert group.exception_type == "org.apache.kafka.connect.errors.DataException"
    assert "JsonConverter" in group.sample_stack


def test_the_message_page_and_api_show_the_dead_letter_as_inert_text(desk):
    desk.ingest("dead", {"spring-1": b"{}"}, headers=SPRING)
    desk.deliver_until_idle()
    desk.refresh()
    client = _client(desk)

    page = client.get("/messages/spring-1/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="message-dead-letter"' in html
    assert "Kafka topic &#x27;payments&#x27;" in html or "payments" in html
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html

    detail = client.get("/api/v1/messages/spring-1").json()
    dead = detail["dead_letter"]
    assert dead["kind"] == "spring-kafka"
    assert dead["exception_type"].endswith("ListenerExecutionFailedException")
    assert dead["details"]["Consumer group"] == "billing"
    assert detail["exception_type"] == dead["exception_type"]


def test_a_message_without_a_dead_letter_record_has_none_on_its_page(desk):
    desk.ingest("dead", {"plain-1": b"{}"}, headers={"note": json.dumps({"x-death": "no"})})
    desk.deliver_until_idle()
    desk.refresh()

    page = _client(desk).get("/messages/plain-1/")
    assert 'id="message-dead-letter"' not in page.content.decode()
    assert _client(desk).get("/api/v1/messages/plain-1").json()["dead_letter"] is None
