"""The outbox loses nothing: a receiver or a mail server that is down gets its alert when it is
back, attempts back off, a delivery that keeps failing stays failed for an administrator to see
and send again, and every failure says why in words."""

from datetime import timedelta

import pytest
from django.utils import timezone

from console.alerts import events as E
from console.alerts.models import AlertDelivery
from console.alerts.sending import alerts_send
from console.alerts.services import alert_raise, delivery_retry
from console.audit.models import AuditEntry
from tests.alerts.conftest import queue_disabled_alert

pytestmark = pytest.mark.django_db


def later(minutes):
    return timezone.now() + timedelta(minutes=minutes)


def test_a_webhook_receiver_that_fails_gets_the_alert_once_it_recovers(receiver, webhook):
    queue_disabled_alert(to=[])
    receiver.answer = 503
    assert alerts_send() == (0, 1)
    delivery = AlertDelivery.objects.get(channel="webhook")
    assert delivery.state == "pending"
    assert delivery.attempts == 1
    assert delivery.last_error == "the receiver answered HTTP 503 Service Unavailable"
    # Backed off: not due at once, nor while its backoff lasts.
    assert delivery.due_at > timezone.now() + timedelta(seconds=20)
    assert alerts_send() == (0, 0)

    receiver.stop()  # now not even listening
    assert alerts_send(now=later(1)) == (0, 1)
    delivery.refresh_from_db()
    assert delivery.attempts == 2
    assert delivery.last_error.startswith("the receiver could not be reached: ")
    assert delivery.due_at > timezone.now() + timedelta(seconds=50)  # twice as long

    receiver.answer = 200
    receiver.start()
    assert alerts_send(now=later(2)) == (1, 0)
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.last_error) == ("sent", 3, "")
    (payload,) = receiver.accepted()
    assert payload["delivery"] == delivery.id
    assert all(signed for _, _, signed, _ in receiver.got)
    assert alerts_send(now=later(60)) == (0, 0)  # sent is sent


def test_a_mail_server_that_is_down_loses_no_email(personas, emails, mailbox):
    mailbox.stop()
    queue_disabled_alert(to=[personas["admin"]])
    assert alerts_send() == (0, 1)
    delivery = AlertDelivery.objects.get(channel="email")
    assert delivery.address == emails["admin"]
    assert "ConnectionRefusedError" in delivery.last_error
    mailbox.start()
    assert alerts_send(now=later(1)) == (1, 0)
    (mail,) = mailbox.to(emails["admin"])
    assert mail["Message-ID"] == f"<alert-delivery-{delivery.id}@antidote>"


def test_a_delivery_that_keeps_failing_stays_failed_until_an_admin_sends_it_again(
    settings, personas, receiver, webhook
):
    settings.ALERTS_MAX_ATTEMPTS = 3
    queue_disabled_alert(to=[])
    receiver.answer = 500
    for minutes in (0, 1, 3):
        assert alerts_send(now=later(minutes)) == (0, 1)
    delivery = AlertDelivery.objects.get(channel="webhook")
    assert (delivery.state, delivery.attempts, delivery.due_at) == ("failed", 3, None)
    assert alerts_send(now=later(600)) == (0, 0)  # given up: never due again by itself

    receiver.answer = 200
    assert delivery_retry(actor=personas["admin"], delivery=delivery)
    assert not delivery_retry(actor=personas["admin"], delivery=delivery)  # pending already
    assert alerts_send() == (1, 0)
    assert len(receiver.accepted()) == 1
    entry = AuditEntry.objects.get(action="alerts.delivery_retried")
    assert (entry.actor, entry.target_id) == ("admin", str(delivery.id))


def test_a_webhook_whose_secret_is_not_set_fails_saying_which_variable(
    monkeypatch, receiver, webhook
):
    monkeypatch.delenv("ANTIDOTE_ALERT_TEST_WEBHOOK_SECRET")
    queue_disabled_alert(to=[])
    assert alerts_send() == (0, 1)
    assert AlertDelivery.objects.get(channel="webhook").last_error == (
        "SecretMissing: the environment variable ANTIDOTE_ALERT_TEST_WEBHOOK_SECRET, which holds "
        "this webhook's secret, is not set in the worker"
    )
    assert receiver.got == []


def test_a_webhook_hears_only_of_its_events_and_queues(personas, receiver):
    from console.alerts.services import webhook_create

    webhook_create(
        actor=personas["admin"],
        name="payments-team",
        url=receiver.url,
        kinds=[E.QUEUE_DISABLED],
        queues=["payments"],
        secret_env="ANTIDOTE_ALERT_TEST_WEBHOOK_SECRET",
    )
    queue_disabled_alert(to=[])  # orders: not its queue
    alert_raise(
        kind=E.QUEUE_ENABLED, about="payments", title="t", text="x", queue="payments", to=[]
    )  # not its event
    alert_raise(
        kind=E.QUEUE_DISABLED, about="payments", title="t", text="x", queue="payments", to=[]
    )
    assert alerts_send() == (1, 0)
    assert [p["queue"] for p in receiver.accepted()] == ["payments"]


def test_old_alerts_are_forgotten_once_nothing_of_theirs_is_left_to_send(
    settings, personas, receiver, webhook
):
    from console.alerts.models import Alert
    from console.alerts.watch import alerts_forget

    settings.ALERTS_KEEP_DAYS = 30
    sent = queue_disabled_alert(to=[personas["admin"]])
    receiver.answer = 500
    unsent = alert_raise(
        kind=E.QUEUE_ENABLED, about="orders", title="t", text="x", queue="orders", to=[]
    )
    recent = alert_raise(kind=E.QUEUE_ENABLED, about="payments", title="t", text="x", to=[])
    AlertDelivery.objects.filter(alert=sent, channel="webhook").update(state="sent")
    Alert.objects.exclude(id=recent.id).update(created_at=timezone.now() - timedelta(days=31))
    assert alerts_forget() == 1
    assert set(Alert.objects.values_list("id", flat=True)) == {unsent.id, recent.id}
    assert not AlertDelivery.objects.filter(alert_id=sent.id).exists()
