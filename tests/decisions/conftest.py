"""Fixtures for the decision screens and API: quarantined messages in the index (rows inserted
by hand: the index is a read model the refresh fills, and these tests only read it), requests
made through the services, and error notifications committed to the lake."""

import json
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from console.decisions.services import Action, action_request_approve, action_request_create
from console.lake.models import LakeCommit
from console.lake.services import lake
from console.queues.models import Queue
from console.readmodels.models import MessageIndex
from tests.browse.conftest import Index
from workers.lake.schema import NOTIFICATION_SCHEMA

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
# Every persona of the permission tests, None the anonymous visitor.


@pytest.fixture
def on(settings):
    """Break-glass switched on."""
    settings.BREAK_GLASS = True


@pytest.fixture
def quarantine(db, lake_root):
    """m-00 … m-11: m-00 to m-09 quarantined (NDLV), m-10 and m-11 waiting; queues orders
    (m-00 … m-07) and payments; groups g-missing (even) and g-other (odd)."""
    Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")
    Queue.objects.create(name="payments", handler="workers.demo.handlers.noop")
    MessageIndex.objects.bulk_create(
        MessageIndex(
            message_id=f"m-{i:02d}",
            queue="orders" if i < 8 else "payments",
            original_queue="orders",
            state="NDLV" if i < 10 else "WAIT",
            delivery_count=5,
            reason=f"order {i} not found",
            exception_type="KeyError",
            group_id="g-missing" if i % 2 == 0 else "g-other",
            body_path="messages/x",
            enqueued_at=T0,
            updated_at=T0,
            last_failure_at=T0 - timedelta(minutes=i),
        )
        for i in range(12)
    )


@pytest.fixture
def index(db, lake_root):
    return Index()


# A bulk edit's group: JSON orders without a currency, and one order that is not JSON.
CURRENCY_GROUP = "g-currency"


@pytest.fixture
def bulk_orders(index):
    """o-1 … o-4, JSON orders without a currency, and o-5, one sent by fax (text), quarantined
    in failure group CURRENCY_GROUP, ingested for real (their bodies are in the lake)."""
    index.group(CURRENCY_GROUP)
    for n in range(1, 5):
        index.message(
            f"o-{n}",
            json.dumps({"order": n}),
            group_id=CURRENCY_GROUP,
            ingest={"content_type": "application/json"},
        )
    index.message(
        "o-5", "order 5, by fax", group_id=CURRENCY_GROUP, ingest={"content_type": "text/plain"}
    )
    return [f"o-{n}" for n in range(1, 6)]


class Requests:
    """Requests made through the services, as the console and the API make them."""

    def __init__(self, personas):
        self.personas = personas

    def make(
        self, scope=None, kind="reprocess", *, by="operator", comment="fixed the handler", **a
    ):
        return action_request_create(
            actor=self.personas[by],
            scope=scope or {"kind": "selection", "ids": ["m-01", "m-03"]},
            action=Action(kind=kind, **a),
            comment=comment,
        )

    def approved(self, scope=None, **kwargs):
        request = self.make(scope, **kwargs)
        if request.status == "pending":
            request = action_request_approve(actor=self.personas["approver"], request=request)
        return request


@pytest.fixture
def requests(personas, quarantine):
    return Requests(personas)


def notification(message_id, *, at, sender="shop@example.test", conversation_id="c-1", **fields):
    return {
        "message_id": message_id,
        "conversation_id": conversation_id,
        "sender": sender,
        "code": "127",
        "description": "Unable to process message.",
        "at": at,
        "run_id": "request:1",
        **fields,
    }


def notifications_commit(rows, *, commit=True):
    """Write rows to a new notifications directory; visible only once committed."""
    store = lake()
    relpath = store.new_dir("notifications", "test")
    store.write_arrow(pa.Table.from_pylist(rows, schema=NOTIFICATION_SCHEMA), relpath)
    if commit:
        LakeCommit.objects.create(
            dataset="notifications", path=relpath, row_count=len(rows), idempotency_key=relpath
        )
    return relpath
