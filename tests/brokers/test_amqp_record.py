"""A RabbitMQ delivery as an ingest record: its properties kept in both forms (typed, to publish
it again as it came; readable, for people and the dead-letter reader), and its id as stable as
ingest needs it to be."""

from datetime import UTC, datetime
from decimal import Decimal

import pika
import pytest

from tests.brokers.records import as_stored
from workers.brokers.rabbitmq.record import (
    PROPERTIES_HEADER,
    properties_read,
    publish_properties,
    record_of,
)

DIED_AT = datetime(2026, 11, 28, 0, 40, 1, tzinfo=UTC)


def _properties(**values):
    headers = {
        "x-death": [
            {
                "count": 1,
                "exchange": "",
                "queue": "orders",
                "reason": "rejected",
                "routing-keys": ["orders"],
                "time": DIED_AT,
            }
        ],
        "x-trace": b"\x00\x01",
        "x-café": "crème",
    }
    values = {"delivery_mode": 2, "content_type": "text/plain", "priority": 3, **values}
    return pika.BasicProperties(headers=values.pop("headers", headers), **values)


def _record(properties, body=b"order 1"):
    return as_stored(
        record_of(
            body=body,
            properties=properties,
            drained_from="orders.dlq",
            into="orders-dead",
            source="orders-rabbitmq",
        )
    )


def test_a_message_without_a_message_id_keeps_the_id_it_was_given_before_the_json_library_changed():
    # Taken before an upgrade, not acknowledged, taken again after it: stored once only if the
    # id is the same. This is the id the json-module encoding gave this delivery.
    assert _record(_properties())["id"] == "amqp-88c1d03c303f1bf0e506fb265c4c3de6caf3fb1a"


def test_the_same_delivery_gets_the_same_id_and_another_body_another():
    assert _record(_properties())["id"] == _record(_properties())["id"]
    assert _record(_properties(), body=b"order 2")["id"] != _record(_properties())["id"]


def test_the_typed_properties_give_back_every_value_to_publish_it_as_it_came():
    properties = _properties(
        message_id="m-1", timestamp=1_795_826_401, headers={"price": Decimal("9.99")}
    )
    record = _record(properties)

    published = publish_properties(record["headers"])

    assert published.message_id == "m-1"
    assert published.timestamp == 1_795_826_401
    assert published.headers == {"price": Decimal("9.99")}
    assert published.delivery_mode == 2 and published.priority == 3


def test_timestamps_and_bytes_keep_their_types_in_the_typed_form():
    values = properties_read(_record(_properties())["headers"][PROPERTIES_HEADER])

    death = values["headers"]["x-death"][0]
    # pika writes a naive datetime as seconds since the epoch in UTC.
    assert death["time"] == DIED_AT.replace(tzinfo=None)
    assert values["headers"]["x-trace"] == b"\x00\x01"
    assert values["headers"]["x-café"] == "crème"


def test_people_read_a_death_record_with_its_time_in_iso_form_and_bytes_in_base64():
    headers = _record(_properties())["headers"]

    assert '"time":"2026-11-28T00:40:01+00:00"' in headers["x-death"]
    assert headers["x-trace"] == "AAE="
    assert headers["x-café"] == "crème"


def test_a_table_nested_too_deep_to_write_is_an_error_the_consumer_sets_aside():
    nested = {}
    inner = nested
    for _ in range(300):
        inner["deeper"] = {}
        inner = inner["deeper"]
    with pytest.raises(TypeError):
        _record(pika.BasicProperties(headers={"x-nested": nested}))


def test_a_publisher_cannot_write_a_record_of_ours_it_is_kept_under_a_foreign_name():
    forged = {
        "antidote-redrive-target": '{"exchange": "", "routing_key": "attacker"}',
        "Antidote-Source": "someone",
        "amqp-drained-from": "payments",
        "x-trace": "t-1",
    }
    headers = _record(_properties(headers=forged))["headers"]

    assert headers["amqp-drained-from"] == "orders.dlq"
    assert headers["antidote-source"] == "orders-rabbitmq"
    assert "antidote-redrive-target" not in headers
    assert headers["x-foreign-antidote-redrive-target"] == forged["antidote-redrive-target"]
    assert headers["x-foreign-Antidote-Source"] == "someone"
    assert headers["x-foreign-amqp-drained-from"] == "payments"
    assert headers["x-trace"] == "t-1"
