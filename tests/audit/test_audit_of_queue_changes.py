"""Policy changes and queue re-enabling are in the audit trail, with who did them."""

import pytest

from console.audit.models import AuditEntry
from console.audit.selectors import audit_verify
from console.queues.models import Queue
from console.queues.services import queue_reenable, queues_load

pytestmark = pytest.mark.django_db

ORDERS = {"name": "orders", "handler": "workers.demo.handlers.noop"}


def test_loading_queues_records_creations_and_policy_changes_only():
    queues_load(data=[ORDERS], actor="cli:ops")
    queues_load(data=[ORDERS], actor="cli:ops")  # unchanged: nothing to record
    queues_load(data=[{**ORDERS, "max_failed_deliveries": 9}], actor="cli:ops")
    entries = list(AuditEntry.objects.values_list("actor", "action", "target_id", "details"))
    assert [e[:3] for e in entries] == [
        ("cli:ops", "queue.created", "orders"),
        ("cli:ops", "policy.changed", "orders"),
    ]
    assert entries[1][3] == {"changed": {"max_failed_deliveries": 9}}
    assert audit_verify().ok


def test_re_enabling_a_disabled_queue_is_recorded_with_why_it_was_disabled(django_user_model):
    admin = django_user_model.objects.create_user("admin")
    queue = Queue.objects.create(
        name="invoices",
        handler="workers.demo.handlers.noop",
        enabled=False,
        disabled_reason="5 failed attempts in a row",
    )
    assert queue_reenable(queue_ids=[queue.id], actor=admin) == 1
    entry = AuditEntry.objects.get(action="queue.enabled")
    assert (entry.actor, entry.action, entry.target_id) == ("admin", "queue.enabled", "invoices")
    assert entry.details == {"was_disabled_because": "5 failed attempts in a row"}
    # Re-enabling an enabled queue records nothing.
    queue_reenable(queue_ids=[queue.id], actor=admin)
    assert AuditEntry.objects.filter(action="queue.enabled").count() == 1


@pytest.mark.parametrize("route", ["the dashboard's banner", "the API"], ids=["screen", "api"])
def test_re_enabling_from_the_console_or_the_api_names_the_administrator(client, personas, route):
    Queue.objects.create(
        name="invoices",
        handler="workers.demo.handlers.noop",
        enabled=False,
        disabled_reason="5 failed attempts in a row",
    )
    client.force_login(personas["admin"])
    if route == "the API":
        response = client.post("/api/v1/queues/invoices/enable", content_type="application/json")
        assert response.status_code == 200 and response.json()["changed"] is True
    else:
        assert client.post("/queues/invoices/enable").status_code == 302
    entry = AuditEntry.objects.get(action="queue.enabled")
    assert entry.actor == "admin"
    assert Queue.objects.get(name="invoices").enabled
