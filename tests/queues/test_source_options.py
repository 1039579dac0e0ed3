"""A source's kind and its `options` (the kind's own settings), checked by the kind's connector
when a queue file is loaded: an unknown kind, options the connector refuses, and a kind whose
connector cannot be loaded are refused with a sentence, never a crash."""

import pytest

from console.queues.models import SOURCE_KINDS, BrokerSource, Queue
from console.queues.services import QueueLoadError, queues_load
from console.queues.sources import INTAKE_HANDLER, options_errors
from workers.brokers import registry as shape

pytestmark = pytest.mark.django_db

DEAD = {"name": "orders-dead", "handler": INTAKE_HANDLER}
SOURCE = {"name": "orders-dlq", "url_env": "SHOP_AMQP_URL", "broker_queue": "orders.dlq"}


def _refused(source):
    with pytest.raises(QueueLoadError) as refused:
        queues_load(
            data={"queues": [DEAD], "sources": [{**SOURCE, "queue": "orders-dead", **source}]}
        )
    assert not Queue.objects.exists() and not BrokerSource.objects.exists()
    return refused.value.errors


def test_the_kinds_are_rabbitmq_nats_and_redis_each_with_a_title():
    assert SOURCE_KINDS == ("rabbitmq", "nats", "redis")
    assert [shape.KIND_TITLES[k] for k in SOURCE_KINDS] == [
        "RabbitMQ",
        "NATS JetStream",
        "Redis Streams",
    ]


def test_an_unknown_kind_is_refused_naming_the_kinds_there_are():
    errors = _refused({"kind": "sqs"})

    assert any("kind must be one of rabbitmq, nats, redis, not 'sqs'" in e for e in errors), errors
    assert options_errors("sqs", {}) == ["'sqs' is not a kind of source (rabbitmq, nats, redis)"]


def test_options_the_connector_refuses_are_refused_with_its_reason():
    errors = _refused({"kind": "rabbitmq", "options": {"stream": "ORDERS"}})

    assert errors == ["source 'orders-dlq' (entry 1): RabbitMQ sources take no options, not stream"]


def test_options_that_are_not_a_mapping_are_refused():
    errors = _refused({"options": ["ORDERS"]})

    assert errors == [
        "source 'orders-dlq' (entry 1): options must be a mapping of the rabbitmq source's settings"
    ]


def test_a_kind_whose_connector_cannot_be_loaded_is_refused_saying_so(monkeypatch):
    monkeypatch.setitem(shape.CONNECTOR_MODULES, "nats", "workers.brokers.no_such_connector")

    (error,) = _refused({"kind": "nats", "options": {"stream": "ORDERS"}})

    assert error.startswith(
        "source 'orders-dlq' (entry 1): the NATS JetStream connector cannot be loaded "
        "(workers.brokers.no_such_connector: No module named"
    )


def test_a_kind_whose_module_has_no_connector_yet_is_refused_saying_so(monkeypatch):
    # A module that imports but holds no CONNECTOR (one being written, say).
    monkeypatch.setitem(shape.CONNECTOR_MODULES, "redis", "workers.brokers.registry")

    assert options_errors("redis", {}) == [
        "the Redis Streams connector is not ready (workers.brokers.registry has no CONNECTOR)"
    ]


def test_a_source_without_options_is_stored_with_none_and_no_lag_yet():
    queues_load(data={"queues": [DEAD], "sources": [{**SOURCE, "queue": "orders-dead"}]})

    source = BrokerSource.objects.get()
    assert (source.kind, source.options) == ("rabbitmq", {})
    assert (source.lag, source.lag_at, source.connected_to) == (None, None, "")
