"""Each event reaches the people who may and want to hear of it, by each channel: the console's
bell, email through a real SMTP server, and a signed webhook to a real HTTP receiver."""

from datetime import timedelta

import pytest
from django.utils import timezone

from console.alerts import events as E
from console.alerts.models import Alert, AlertDelivery, InflowThreshold, Subscription
from console.alerts.sending import alerts_send
from console.alerts.services import subscriptions_save
from console.alerts.watch import alerts_watch
from console.audit.models import AuditEntry
from console.audit.tasks import audit_verify_task
from console.decisions.services import action_request_reject
from console.queues.models import BrokerSource, Queue
from console.queues.services import queue_reenable
from console.queues.sources import source_state_set
from console.readmodels.models import QuarantineInflow
from tests.decisions.conftest import Requests
from tests.decisions.desk import make_desk

pytestmark = pytest.mark.django_db


def bell(user):
    """(kind, title) of the user's console alerts, oldest first."""
    return [
        (d.alert.kind, d.alert.title)
        for d in AlertDelivery.objects.filter(user=user, channel="console")
        .select_related("alert")
        .order_by("id")
    ]


@pytest.fixture
def desk(spark, personas, settings, transactional_db, lake_root):
    return make_desk(spark, personas, settings)


@pytest.mark.spark
def test_a_queue_the_engine_disables_reaches_admins_in_the_console_by_email_and_on_a_webhook(
    desk, personas, emails, mailbox, receiver, webhook
):
    desk.queue("invoices", handler="tests.handlers_for_tests.always_transient", disable_after=3)
    desk.ingest("invoices", ["x"] * 5)
    desk.deliver()
    assert not Queue.objects.get(name="invoices").enabled

    alert = Alert.objects.get(kind=E.QUEUE_DISABLED)
    assert alert.title == "Queue invoices was disabled"
    assert "3 failed attempts in a row" in alert.text
    # The role defaults: admins, operators, approvers and viewers hear of it in the console; the
    # auditor (who sees no queues) and the application account do not.
    for name in ("admin", "operator", "approver", "viewer"):
        assert bell(personas[name]) == [(E.QUEUE_DISABLED, alert.title)], name
    for name in ("auditor", "application", "outsider"):
        assert bell(personas[name]) == [], name

    sent, failed = alerts_send()
    assert failed == 0
    assert sent == 5  # four emails (queue disabled is urgent by default) and the webhook
    (mail,) = mailbox.to(emails["admin"])
    assert mail["Subject"] == "[Antidote] Queue invoices was disabled"
    assert "3 failed attempts in a row" in mail.get_content()
    assert mail["Message-ID"].startswith("<alert-delivery-")
    assert mailbox.to(emails["auditor"]) == []

    ((headers, payload, signed, status),) = receiver.got
    assert signed and status == 200
    assert headers["X-Antidote-Event"] == E.QUEUE_DISABLED
    assert payload["event"] == E.QUEUE_DISABLED
    assert payload["queue"] == "invoices"
    assert payload["text"].startswith("Queue invoices was disabled: The queue invoices was")
    assert payload["link"].endswith("/queues/")
    assert int(headers["X-Antidote-Delivery"]) == payload["delivery"]
    assert not AlertDelivery.objects.filter(state="pending").exists()

    # Enabled again, then disabled again within the period: the second disable is an alert of
    # its own, not a repeat of the first, since the re-enable closed its incident (a pager
    # resolved its page, and must be paged again).
    queue_reenable(queue_ids=[Queue.objects.get(name="invoices").id], actor=personas["admin"])
    assert bell(personas["admin"])[-1] == (E.QUEUE_ENABLED, "Queue invoices was enabled again")
    assert bell(personas["operator"]) == [(E.QUEUE_DISABLED, alert.title)]  # not its default
    desk.deliver(at=desk.now + timedelta(days=1))
    assert not Queue.objects.get(name="invoices").enabled
    assert Alert.objects.filter(kind=E.QUEUE_DISABLED).count() == 2
    assert bell(personas["operator"]) == [(E.QUEUE_DISABLED, alert.title)] * 2
    alert.refresh_from_db()
    assert alert.repeats == 0


@pytest.mark.spark
def test_a_new_failure_group_is_one_alert_however_many_messages_join_it(
    desk, personas, emails, mailbox, receiver, webhook
):
    subscriptions_save(user=personas["operator"], choices={E.GROUP_NEW: (True, True, [])})
    desk.queue("orders")
    desk.quarantine("orders", ["permanent"] * 2)
    (alert,) = Alert.objects.filter(kind=E.GROUP_NEW)
    assert alert.title == "New failure group in orders: PermanentFailure"
    assert alert.link == f"/groups/{alert.details['fingerprint']}/"
    assert alert.details["count"] == 2
    assert bell(personas["operator"]) == [(E.GROUP_NEW, alert.title)]
    assert bell(personas["viewer"]) == []  # not a viewer's default
    alerts_send()
    (mail,) = mailbox.to(emails["operator"])
    assert mail["Subject"] == f"[Antidote] {alert.title}"
    assert [p["event"] for p in receiver.accepted()] == [E.GROUP_NEW]

    desk.quarantine("orders", ["permanent"] * 3, prefix="more")  # the same group grows
    desk.quarantine("orders", ["<script>alert(1)</script>"], prefix="odd")  # another group
    titles = sorted(Alert.objects.filter(kind=E.GROUP_NEW).values_list("title", flat=True))
    assert titles == [
        "New failure group in orders: PermanentFailure",
        "New failure group in orders: ValueError",
    ]


def test_a_queue_over_its_inflow_threshold_alerts_once_a_period(personas):
    from console.alerts.services import threshold_set

    Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")
    threshold_set(actor=personas["admin"], queue="orders", count=100, window_hours=2)
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    QuarantineInflow.objects.create(queue="orders", hour=hour - timedelta(hours=1), count=60)
    QuarantineInflow.objects.create(queue="orders", hour=hour - timedelta(hours=2), count=500)
    QuarantineInflow.objects.create(queue="orders", hour=hour, flow="delivered", count=900)
    assert alerts_watch() == []  # 60 in the window: the 500 are older, deliveries don't count

    QuarantineInflow.objects.create(queue="orders", hour=hour, count=40)
    (raised,) = alerts_watch()
    alert = Alert.objects.get(id=raised)
    assert alert.title == "Queue orders quarantined 100 messages in 2 hours"
    assert alert.details == {"count": 100, "threshold": 100, "window_hours": 2}
    assert alert.link == "/messages/?queue=orders&state=NDLV"  # the list of what it quarantined
    assert bell(personas["operator"]) == [(E.QUEUE_INFLOW, alert.title)]
    assert alerts_watch() == []  # the same period
    alert.refresh_from_db()
    assert alert.repeats == 1
    assert InflowThreshold.objects.get().updated_by == personas["admin"]
    assert AuditEntry.objects.filter(action="alerts.threshold_set", target_id="orders").exists()


def test_a_request_waiting_reaches_approvers_not_its_requester_whom_its_steps_reach(
    personas,
    quarantine,
    emails,
    mailbox,
):
    desk = Requests(personas)
    request = desk.make({"kind": "selection", "ids": ["m-00", "m-02"]}, kind="fail")
    assert request.status == "pending"
    waiting = f"operator asks for your approval of request {request.id} (fail of 2 messages)"
    assert bell(personas["approver"]) == [(E.REQUEST_WAITING, waiting)]
    assert bell(personas["operator"]) == []  # the requester does not approve their own
    assert bell(personas["admin"]) == []  # cannot approve

    from console.decisions.services import action_request_approve

    action_request_approve(actor=personas["approver"], request=request)
    assert bell(personas["operator"]) == [
        (E.REQUEST_APPROVED, f"Your request {request.id} (fail of 2 messages) was approved")
    ]
    other = desk.make({"kind": "selection", "ids": ["m-04", "m-06"]}, kind="fail")
    action_request_reject(actor=personas["approver"], request=other, comment="<b>not now</b>")
    rejected = Alert.objects.get(kind=E.REQUEST_REJECTED)
    assert rejected.text == "approver rejected it: <b>not now</b>"

    alerts_send()
    # Waiting is urgent: by email too, one for each request.
    mail, _other = mailbox.to(emails["approver"])
    assert mail["Subject"] == f"[Antidote] {waiting}"
    assert f"/requests/{request.id}/" in mail.get_content()
    assert mailbox.to(emails["operator"]) == []  # approved and rejected are for the bell


@pytest.mark.spark
def test_a_request_that_finishes_tells_its_requester_what_it_did(
    desk, personas, emails, mailbox, receiver, webhook
):
    subscriptions_save(user=personas["operator"], choices={E.REQUEST_FINISHED: (True, True, [])})
    desk.queue("orders")
    ids = desk.quarantine("orders", ["permanent"] * 3)
    request = desk.request({"kind": "selection", "ids": ids}, kind="fail")
    desk.execute(request)
    (alert,) = Alert.objects.filter(kind=E.REQUEST_FINISHED)
    assert alert.title == f"Your request {request.id} (fail of 3 messages) finished"
    assert alert.text == "It finished. Decided 3, skipped 0, could not decide 0."
    assert [k for k, _ in bell(personas["operator"])] == [
        E.GROUP_NEW,
        E.REQUEST_APPROVED,
        E.REQUEST_FINISHED,
    ]
    assert E.REQUEST_FINISHED not in [k for k, _ in bell(personas["approver"])]
    alerts_send()
    assert [m["Subject"] for m in mailbox.to(emails["operator"])] == [f"[Antidote] {alert.title}"]
    assert E.REQUEST_FINISHED in [p["event"] for p in receiver.accepted()]


def test_a_broken_audit_chain_alerts_the_auditors(personas, emails, mailbox):
    for n in range(3):
        from console.audit.services import audit_record

        audit_record(actor="system", action="test.entry", details={"n": n})
    assert audit_verify_task() is True
    assert not Alert.objects.exists()

    AuditEntry.objects.filter(action="test.entry", details__n=1).update(actor="mallory")
    assert audit_verify_task() is False
    (alert,) = Alert.objects.filter(kind=E.AUDIT_BROKEN)
    assert "altered" in alert.text or "does not match" in alert.text, alert.text
    assert bell(personas["auditor"]) == [(E.AUDIT_BROKEN, "The audit trail is not intact")]
    assert bell(personas["admin"]) == []
    alerts_send()
    assert len(mailbox.to(emails["auditor"])) == 1


def test_a_broker_source_that_goes_down_or_silent_alerts_the_admins(personas):
    queue = Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")
    BrokerSource.objects.create(
        name="orders-dlq", kind="rabbitmq", url_env="AMQP_URL", broker_queue="dlq", queue=queue
    )
    source_state_set(name="orders-dlq", state="consuming")
    assert not Alert.objects.exists()
    source_state_set(name="orders-dlq", state="down", error="connection refused")
    (alert,) = Alert.objects.all()
    assert (alert.kind, alert.title) == (E.SOURCE_DOWN, "Broker source orders-dlq is down")
    assert "connection refused" in alert.text
    assert bell(personas["admin"]) == [(E.SOURCE_DOWN, alert.title)]

    # A consumer killed while consuming says nothing: its silence is found by the watch.
    BrokerSource.objects.filter(name="orders-dlq").update(
        state="consuming", heartbeat_at=timezone.now() - timedelta(minutes=10)
    )
    Alert.objects.all().delete()
    (raised,) = alerts_watch()
    assert Alert.objects.get(id=raised).title == "Broker source orders-dlq is not running"


def test_a_subscription_narrows_what_one_hears_of_and_by_which_channel(personas, emails):
    operator = personas["operator"]
    for name in ("orders", "payments"):
        Queue.objects.create(name=name, handler="workers.demo.handlers.noop")
    subscriptions_save(user=operator, choices={E.QUEUE_DISABLED: (False, True, ["payments"])})
    assert AuditEntry.objects.filter(
        action="alerts.subscriptions_changed", target_id="operator"
    ).exists()
    from console.audit.services import audit_record

    for name in ("orders", "payments"):
        audit_record(
            actor="system",
            action="queue.disabled",
            target_type="queue",
            target_id=name,
            details={"reason": "queue disabled: 5 failed attempts in a row"},
        )
    mine = AlertDelivery.objects.filter(user=operator)
    assert [(d.channel, d.alert.queue) for d in mine] == [("email", "payments")]
    assert Subscription.objects.get(user=operator).queues == ["payments"]
    # The others keep their role's default.
    assert len(bell(personas["approver"])) == 2


@pytest.mark.spark
def test_a_redrive_stopped_by_a_re_failing_step_tells_its_requester_why(
    desk, personas, emails, mailbox, receiver, webhook
):
    from tests.decisions.test_progressive_redrive import quarantined, step_through

    ids = quarantined(desk, ["permanent"] * 4)
    request = desk.request({"kind": "selection", "ids": ids}, steps=[1], refailure_threshold=0)
    verdict, request = step_through(desk, request)
    assert (verdict, request.status) == ("failed", "failed")
    (alert,) = Alert.objects.filter(kind=E.REQUEST_STOPPED)
    assert alert.title == f"Your request {request.id} (reprocess of 4 messages) was stopped"
    assert alert.text.startswith("Stopped, and the rest of the set was not touched: ")
    assert request.canary_result in alert.text
    assert (E.REQUEST_STOPPED, alert.title) in bell(personas["operator"])
    assert not Alert.objects.filter(kind=E.REQUEST_FINISHED).exists()
    alerts_send()  # stopped is urgent: by email by default
    assert [m["Subject"] for m in mailbox.to(emails["operator"])] == [f"[Antidote] {alert.title}"]
    assert E.REQUEST_STOPPED in [p["event"] for p in receiver.accepted()]
