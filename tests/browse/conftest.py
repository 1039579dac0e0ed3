"""Fixtures for the console's screens and API: messages ingested through the real service (so
their bodies are real lake files) and index rows inserted by hand (the index is a read model
that the refresh job fills; these tests only read it)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from rest_framework.test import APIClient

from console.ingest.models import MessageKey
from console.ingest.services import messages_ingest
from console.queues.models import Queue
from console.readmodels.models import FailureGroup, MessageIndex, QuarantineInflow, QueueStat

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


class Index:
    """Puts messages in the lake and in the index."""

    def queue(self, name="orders", **fields):
        # objects.create skips the name validator: tests need hostile queue names too.
        queue, _ = Queue.objects.get_or_create(
            name=name, defaults={"handler": "workers.demo.handlers.noop", **fields}
        )
        return queue

    def ingest(self, message_id, body="{}", *, queue="orders", **fields):
        self.queue(queue)
        result = messages_ingest(
            records=[{"id": message_id, "queue": queue, "body": body, **fields}], source="test"
        )
        assert not result.errors, result.errors
        return MessageKey.objects.select_related("commit").get(message_id=message_id)

    def row(self, message_id, *, body_path="messages/none", **fields):
        """An index row only (no lake body): enough for the browser and its filters."""
        values = {
            "queue": "orders",
            "original_queue": fields.get("queue", "orders"),
            "state": "NDLV",
            "delivery_count": 5,
            "last_failure_at": T0,
            "first_failure_at": T0 - timedelta(hours=1),
            "reason": "inventory service unavailable",
            "exception_type": "ConnectionError",
            "enqueued_at": T0 - timedelta(days=1),
            "updated_at": T0,
            "body_path": body_path,
        }
        values.update(fields)
        return MessageIndex.objects.create(message_id=message_id, **values)

    def message(self, message_id, body="{}", *, queue="orders", ingest=None, **fields):
        """Ingested for real and indexed: the detail page finds its body."""
        key = self.ingest(message_id, body, queue=queue, **(ingest or {}))
        fields.setdefault("body_size", len(body) if isinstance(body, str) else 0)
        return self.row(message_id, queue=queue, body_path=key.commit.path, **fields)

    def group(self, fingerprint="g1", **fields):
        values = {
            "queue": "orders",
            "exception_type": "ConnectionError",
            "pattern": "inventory service unavailable for item <n>",
            "sample_reason": "inventory service unavailable for item 7",
            "sample_stack": 'Traceback (most recent call last):\n  File "h.py", line 1',
            "count": 3,
            "first_seen": T0 - timedelta(hours=2),
            "last_seen": T0,
            "states": {"NDLV": 3},
        }
        values.update(fields)
        group = FailureGroup(fingerprint=fingerprint, **values)
        group.states_set(values["states"])
        group.save()
        return group

    def stats(self, queue="orders", **counts):
        return QueueStat.objects.update_or_create(
            queue=queue, defaults={"counts": counts, "updated_at": T0}
        )[0]

    def inflow(self, queue="orders", hour=T0, count=1, flow="quarantined"):
        return QuarantineInflow.objects.create(queue=queue, hour=hour, count=count, flow=flow)


@pytest.fixture
def index(db, lake_root):
    return Index()


@pytest.fixture
def seeded(index, personas):
    """One quarantined JSON order in a failure group, its queue's stats and inflow."""
    index.group("g1")
    index.message(
        "order-1",
        '{"order": 1, "items": [7]}',
        group_id="g1",
        conversation_id="c-1",
        sender="shop@example.test",
        content_type="application/json",
        ingest={
            "conversation_id": "c-1",
            "sender": "shop@example.test",
            "headers": {"trace": "abc"},
            "content_type": "application/json",
        },
    )
    index.stats("orders", NDLV=1, TBDL=4)
    index.inflow("orders", T0, 1)
    return "order-1"


def login(user=None):
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def api(user=None):
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client
