"""The Queue admin: model validation, the cross-queue check and the re-enable action."""

import pytest
from django.utils import timezone

from console.queues.models import Queue

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/queues/queue/"
ADD = "/admin/queues/queue/add/"


def _form(**overrides):
    data = {
        "name": "orders",
        "handler": "workers.demo.handlers.orders",
        "enabled": "on",
        "disabled_reason": "",
        "max_failed_deliveries": "5",
        "exception_destination": "quarantine",
        "blocked_retry_timeout": "60",
        "backoff_every": "1",
        "backoff_delays": "[60, 300]",
        "periodic_interval": "900",
        "on_permanent": "quarantine",
        "poison_match": "id",
        "disable_after": "0",
        "retention_days": "30",
    }
    data.update(overrides)
    return data


def _disabled_queue(name="invoices"):
    return Queue.objects.create(
        name=name,
        handler="workers.demo.handlers.invoices",
        enabled=False,
        disabled_at=timezone.now(),
        disabled_reason="disabled after 5 failed attempts in a row",
        consecutive_failures=5,
    )


def test_the_admin_role_sees_the_queue_list(role_client):
    _disabled_queue()

    response = role_client("admin").get(CHANGELIST)

    assert response.status_code == 200
    assert b"invoices" in response.content


def test_the_list_filters_by_enabled(role_client):
    _disabled_queue("invoices")
    Queue.objects.create(name="orders", handler="workers.demo.handlers.orders")

    response = role_client("admin").get(CHANGELIST, {"enabled__exact": "0"})

    assert response.status_code == 200
    assert response.context["cl"].result_count == 1


def test_the_admin_role_adds_a_valid_queue(role_client):
    response = role_client("admin").post(ADD, _form())

    assert response.status_code == 302
    assert Queue.objects.get(name="orders").backoff_delays == [60, 300]


def test_the_form_refuses_a_handler_that_does_not_import(role_client):
    response = role_client("admin").post(ADD, _form(handler="shop.refunds.handle"))

    assert response.status_code == 200
    [error] = response.context["adminform"].form.errors["handler"]
    assert error.startswith("handler: cannot import module 'shop.refunds'")
    assert not Queue.objects.exists()


def test_the_form_refuses_a_bad_backoff_table(role_client):
    response = role_client("admin").post(ADD, _form(backoff_delays='[300, "soon"]'))

    assert response.status_code == 200
    assert "backoff_delays" in response.context["adminform"].form.errors
    assert not Queue.objects.exists()


def test_the_form_refuses_an_exception_queue_that_does_not_exist(role_client):
    response = role_client("admin").post(ADD, _form(exception_destination="queue:backout"))

    errors = response.context["adminform"].form.errors
    assert errors["exception_destination"] == ["there is no queue named 'backout'"]
    assert not Queue.objects.exists()


def test_the_form_accepts_an_exception_queue_that_exists(role_client):
    Queue.objects.create(name="backout", handler="workers.demo.handlers.noop")

    response = role_client("admin").post(ADD, _form(exception_destination="queue:backout"))

    assert response.status_code == 302
    assert Queue.objects.get(name="orders").exception_destination == "queue:backout"


def test_the_re_enable_action_clears_what_disabling_left(role_client):
    queue = _disabled_queue()

    response = role_client("admin").post(
        CHANGELIST, {"action": "reenable", "_selected_action": [queue.id]}
    )

    assert response.status_code == 302
    queue.refresh_from_db()
    assert queue.enabled is True
    assert queue.disabled_at is None
    assert queue.disabled_reason == ""
    assert queue.consecutive_failures == 0


def test_ticking_enabled_in_the_form_re_enables_like_the_action(role_client):
    queue = _disabled_queue()
    form = _form(name="invoices", handler="workers.demo.handlers.invoices")

    role_client("admin").post(f"{CHANGELIST}{queue.id}/change/", form)

    queue.refresh_from_db()
    assert (queue.enabled, queue.disabled_at, queue.consecutive_failures) == (True, None, 0)


def test_a_viewer_cannot_open_the_queue_admin(role_client):
    response = role_client("viewer").get(CHANGELIST)

    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
