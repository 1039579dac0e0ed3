"""Administrators pause a queue by hand and resume it (re-enable), from the queues page or the
API; the page shows each queue's latest changes, and every step is in the audit trail."""

from django.urls import reverse

from console.audit.models import AuditEntry
from console.queues.models import Queue
from console.queues.services import queue_reenable
from tests.browse.conftest import api, login


def _queue():
    return Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")


def test_an_administrator_pauses_a_queue_with_a_reason_and_resumes_it(db, personas):
    queue = _queue()
    client = login(personas["admin"])

    response = client.post(
        reverse("queue-pause", args=["orders"]), {"reason": "ledger in maintenance"}
    )

    assert response.status_code == 302
    queue.refresh_from_db()
    assert not queue.enabled
    assert queue.disabled_reason == "paused by admin: ledger in maintenance"
    page = client.get(reverse("queue-list")).content.decode()
    assert "paused</strong> by admin: ledger in maintenance" in page
    assert 'class="queue-enable-form"' in page  # paused: the way back is offered

    queue_reenable(queue_ids=[queue.id], actor=personas["admin"])
    actions = list(
        AuditEntry.objects.filter(target_type="queue", target_id="orders").values_list(
            "action", flat=True
        )
    )
    assert actions == ["queue.paused", "queue.enabled"]


def test_pausing_a_paused_queue_changes_nothing(db, personas):
    queue = _queue()
    client = api(personas["admin"])

    first = client.post("/api/v1/queues/orders/pause", {"reason": "x"}, format="json").json()
    second = client.post("/api/v1/queues/orders/pause", {}, format="json").json()

    assert (first["changed"], second["changed"]) == (True, False)
    queue.refresh_from_db()
    assert queue.disabled_reason == "paused by admin: x"


def test_only_those_who_may_change_queues_may_pause_them(db, personas):
    _queue()

    assert (
        login(personas["operator"]).post(reverse("queue-pause", args=["orders"])).status_code == 403
    )
    assert api(personas["operator"]).post("/api/v1/queues/orders/pause").status_code == 403
    assert Queue.objects.get(name="orders").enabled
    page = login(personas["operator"]).get(reverse("queue-list")).content.decode()
    assert 'class="queue-pause-form"' not in page
