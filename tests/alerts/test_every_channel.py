"""Every event reaches every channel: the bell, email through a real SMTP server, and a webhook
to a real HTTP receiver, raised by its real cause. (The causes that need delivery runs on Spark,
a queue disabled, a new failure group, a request finished or stopped, are in
test_events_reach_people.py.)"""

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from console.alerts import events as E
from console.alerts.sending import alerts_send
from console.alerts.services import subscriptions_save, threshold_set
from console.alerts.watch import alerts_watch
from console.audit.models import AuditEntry
from console.audit.services import audit_record
from console.audit.tasks import audit_verify_task
from console.decisions.break_glass import break_glass_execute
from console.decisions.services import action_request_approve, action_request_reject
from console.decisions.sweeper import break_glass_overdue_sweep
from console.queues.models import Queue
from console.queues.services import queue_reenable
from console.queues.sources import source_state_set
from console.readmodels.models import QuarantineInflow
from tests.broker_sources import orders_dlq
from tests.decisions.conftest import Requests

pytestmark = pytest.mark.django_db


def inflow_over(personas):
    threshold_set(actor=personas["admin"], queue="orders", count=10, window_hours=1)
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    QuarantineInflow.objects.create(queue="orders", hour=hour, count=12)
    alerts_watch()


def source_down(personas):
    orders_dlq("AMQP_URL", "dlq")
    source_state_set(name="orders-dlq", state="down", error="connection refused")


def queue_enabled(personas):
    Queue.objects.filter(name="orders").update(
        enabled=False, disabled_at=timezone.now() - timedelta(hours=1)
    )
    queue_reenable(queue_ids=[Queue.objects.get(name="orders").id], actor=personas["admin"])


def audit_broken(personas):
    audit_record(actor="system", action="test.entry")
    AuditEntry.objects.filter(action="test.entry").update(actor="mallory")
    audit_verify_task()


def request_waiting(personas):
    Requests(personas).make({"kind": "selection", "ids": ["m-00", "m-02"]}, kind="fail")


def request_approved(personas):
    request = Requests(personas).make({"kind": "selection", "ids": ["m-00", "m-02"]}, kind="fail")
    action_request_approve(actor=personas["approver"], request=request)


def request_rejected(personas):
    request = Requests(personas).make({"kind": "selection", "ids": ["m-00", "m-02"]}, kind="fail")
    action_request_reject(actor=personas["approver"], request=request, comment="not now")


def role_grant_waiting(personas):
    from django.contrib.auth.models import Group, User

    from console.access.services import role_grant_request

    asker = User.objects.create_user("admin2", password="pw-admin2-1234")
    asker.groups.add(Group.objects.get(name="admin"))
    role_grant_request(
        actor=asker, user=personas["operator"], role=Group.objects.get(name="approver")
    )


def break_glass(personas):
    request = Requests(personas).make({"kind": "selection", "ids": ["m-00", "m-02"]}, kind="fail")
    with override_settings(BREAK_GLASS=True):
        break_glass_execute(
            actor=personas["approver"], request=request, reason="the shop is down", confirm=True
        )


def review_overdue(personas):
    break_glass(personas)
    break_glass_overdue_sweep(now=timezone.now() + timedelta(days=1))


# (the event, its cause, the persona who hears of it)
CAUSES = [
    (E.QUEUE_INFLOW, inflow_over, "operator"),
    (E.SOURCE_DOWN, source_down, "admin"),
    (E.QUEUE_ENABLED, queue_enabled, "admin"),
    (E.AUDIT_BROKEN, audit_broken, "auditor"),
    (E.REQUEST_WAITING, request_waiting, "approver"),
    (E.REQUEST_APPROVED, request_approved, "operator"),
    (E.REQUEST_REJECTED, request_rejected, "operator"),
    (E.ROLE_GRANT_WAITING, role_grant_waiting, "admin"),
    (E.REQUEST_BREAK_GLASS, break_glass, "admin"),
    (E.REQUEST_REVIEW_OVERDUE, review_overdue, "admin"),
]


@pytest.mark.parametrize(("kind", "cause", "persona"), CAUSES, ids=[c[0] for c in CAUSES])
def test_an_event_reaches_the_bell_an_inbox_and_a_webhook(
    kind, cause, persona, personas, quarantine, emails, mailbox, receiver, webhook
):
    user = personas[persona]
    subscriptions_save(user=user, choices={kind: (True, True, [])})
    cause(personas)

    (delivery,) = [d for d in user_alerts(user) if d.alert.kind == kind]
    assert delivery.read_at is None
    assert alerts_send()[1] == 0
    (mail,) = [
        m for m in mailbox.to(emails[persona]) if m["Subject"].endswith(delivery.alert.title)
    ]
    assert delivery.alert.text in mail.get_content()
    (payload,) = [p for p in receiver.accepted() if p["event"] == kind]
    assert payload["title"] == delivery.alert.title
    assert all(signed for _, _, signed, _ in receiver.got)


def user_alerts(user):
    from console.alerts.models import AlertDelivery

    return AlertDelivery.objects.filter(user=user, channel="console").select_related("alert")
