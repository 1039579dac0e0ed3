"""Broker sources as code: a queue file lists the RabbitMQ dead-letter queues Antidote drains
beside its queues, and loading it is all or nothing, audited, and never stores a secret."""

from io import StringIO

import pytest
import yaml
from django.core.management import call_command

from console.audit.models import AuditEntry
from console.queues.models import BrokerSource, Queue
from console.queues.services import QueueLoadError, queues_load
from console.queues.sources import INTAKE_HANDLER, REDRIVE_HANDLER

pytestmark = pytest.mark.django_db

DEAD = {"name": "orders-dead", "handler": INTAKE_HANDLER}
REDRIVE = {
    "name": "orders-redrive",
    "handler": REDRIVE_HANDLER,
    "handler_options": {"url_env": "SHOP_AMQP_URL"},
}
SOURCE = {
    "name": "orders-dlq",
    "kind": "rabbitmq",
    "url_env": "SHOP_AMQP_URL",
    "broker_queue": "orders.dlq",
    "queue": "orders-dead",
    "redrive_queue": "orders-redrive",
}


def test_a_source_is_created_with_the_queues_it_names():
    results = queues_load(data={"queues": [DEAD, REDRIVE], "sources": [SOURCE]})

    assert [(r.kind, r.name, r.status) for r in results] == [
        ("queue", "orders-dead", "created"),
        ("queue", "orders-redrive", "created"),
        ("source", "orders-dlq", "created"),
    ]
    source = BrokerSource.objects.get(name="orders-dlq")
    assert (source.broker_queue, source.queue.name, source.redrive_queue.name) == (
        "orders.dlq",
        "orders-dead",
        "orders-redrive",
    )
    assert source.url_env == "SHOP_AMQP_URL"
    assert Queue.objects.get(name="orders-redrive").handler_options == {"url_env": "SHOP_AMQP_URL"}


def test_loading_the_same_file_again_changes_nothing_and_a_change_is_audited():
    queues_load(data={"queues": [DEAD, REDRIVE], "sources": [SOURCE]}, actor="cli:ops")
    again = queues_load(
        data={"queues": [DEAD, REDRIVE], "sources": [{**SOURCE, "prefetch": 50}]},
        actor="cli:ops",
    )

    assert [r.status for r in again if r.kind == "source"] == ["updated"]
    assert BrokerSource.objects.get().prefetch == 50
    entries = AuditEntry.objects.filter(target_type="source").order_by("id")
    assert [e.action for e in entries] == ["source.created", "source.changed"]
    assert entries.last().details == {"changed": {"prefetch": 50}}


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"queue": "nowhere"}, "queue 'nowhere' does not exist"),
        ({"redrive_queue": "orders-dead"}, f"must have the handler {REDRIVE_HANDLER}"),
        ({"url_env": "amqp://guest:guest@localhost"}, "the URL itself never goes in a file"),
        ({"broker_queue": ""}, "broker_queue (the queue to drain) is required"),
        ({"prefetch": 0}, "prefetch must be a whole number from 1 to 65535"),
        ({"kind": "sqs"}, "kind must be one of rabbitmq"),
        ({"password": "secret"}, "unknown field(s) password"),
    ],
)
def test_a_bad_source_is_refused_with_its_reason_and_nothing_is_loaded(change, error):
    with pytest.raises(QueueLoadError) as refused:
        queues_load(data={"queues": [DEAD, REDRIVE], "sources": [{**SOURCE, **change}]})

    assert any(error in e and "orders-dlq" in e for e in refused.value.errors), refused.value
    assert not Queue.objects.exists()
    assert not BrokerSource.objects.exists()


def test_a_redrive_queue_with_options_its_handler_does_not_take_is_refused():
    with pytest.raises(QueueLoadError, match="refused its handler_options"):
        queues_load(
            data={"queues": [DEAD, {**REDRIVE, "handler_options": {"colour": "red"}}]},
        )


def test_the_command_lists_sources_apart_from_queues(tmp_path):
    path = tmp_path / "queues.yaml"
    path.write_text(yaml.safe_dump({"queues": [DEAD, REDRIVE], "sources": [SOURCE]}))
    out = StringIO()

    call_command("load_queues", str(path), stdout=out)

    assert "source orders-dlq  created" in out.getvalue()
    assert "2 created" in out.getvalue()
