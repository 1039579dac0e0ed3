"""The alert outbox with real processes: the default worker, a Celery worker process, is
SIGKILLed while a webhook receiver holds its request; nothing is lost, and the worker that
takes over sends what was left once the claim ran out, once: the email already sent is not sent
again."""

import pytest
from django.utils import timezone

from console.alerts import events as E
from console.alerts.models import AlertDelivery
from console.alerts.services import alert_raise
from console.alerts.tasks import alerts_send_task
from tests.alerts.conftest import SECRET, SECRET_ENV
from tests.processes.conftest import celery_worker, wait_for
from workers.celery import app

pytestmark = [pytest.mark.slow]

WORKER = celery_worker("default", "-P", "solo")


def test_a_default_worker_killed_mid_send_loses_no_alert_and_its_successor_sends_it_once(
    personas, emails, mailbox, receiver, webhook, processes, tmp_path
):
    app.control.purge()
    env = {
        "ALERTS_CLAIM_SECONDS": "10",
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(mailbox.port),
        SECRET_ENV: SECRET,
    }
    alert_raise(
        kind=E.QUEUE_DISABLED,
        about="orders",
        title="Queue orders was disabled",
        text="The queue orders was disabled: queue disabled: 5 failed attempts in a row",
        queue="orders",
        to=[personas["admin"]],
    )
    email = AlertDelivery.objects.get(channel="email")
    hook = AlertDelivery.objects.get(channel="webhook")
    receiver.hang = True  # holds the first request it gets, and never answers it

    first = processes.start(*WORKER, "-n", "alerts-first@%h", log=tmp_path / "first.log", env=env)
    alerts_send_task.delay()
    wait_for(lambda: receiver.got, timeout=120, what="the webhook's request to arrive")
    processes.kill(first)
    receiver.release.set()

    email.refresh_from_db()
    hook.refresh_from_db()
    assert email.state == "sent"
    assert len(mailbox.mails) == 1
    # Claimed by the dead worker: still pending, due again when the claim runs out.
    assert (hook.state, hook.attempts) == ("pending", 1)
    assert hook.due_at > timezone.now()
    assert receiver.accepted() == []

    processes.start(*WORKER, "-n", "alerts-second@%h", log=tmp_path / "second.log", env=env)
    wait_for(
        lambda: AlertDelivery.objects.filter(id=hook.id, due_at__lte=timezone.now()).exists(),
        timeout=30,
        what="the dead worker's claim to run out",
    )
    alerts_send_task.delay()  # beat's next tick
    wait_for(
        lambda: AlertDelivery.objects.filter(id=hook.id, state="sent").exists(),
        timeout=120,
        what="the successor to send the webhook",
    )
    hook.refresh_from_db()
    assert hook.attempts == 2
    assert [p["delivery"] for p in receiver.accepted()] == [hook.id]
    assert len(receiver.got) == 2  # the one the dead worker never heard back from, and this
    assert len(mailbox.mails) == 1  # the email was not sent twice
