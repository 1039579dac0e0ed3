"""Break-glass (R17): someone who may approve executes a pending request alone, in an emergency,
with a reason and the confirmation of what happens; every other approver and administrator is
told at once, and someone else reviews it within BREAK_GLASS_REVIEW_HOURS, or an alert says the
review is overdue (once). Off unless an administrator turns it on."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied, ValidationError

from console.alerts import events as E
from console.alerts.models import Alert, AlertDelivery
from console.audit.models import AuditEntry
from console.audit.selectors import audit_verify
from console.decisions.break_glass import break_glass_execute, break_glass_review
from console.decisions.models import ActionRequest
from console.decisions.selectors import break_glass_unreviewed
from console.decisions.services import action_request_approve
from console.decisions.sweeper import break_glass_overdue_sweep
from tests.conftest import settled

REASON = "orders stuck since 02:00, the shop is down, and no second approver answers"


@pytest.fixture
def approver2(personas):
    """A second approver, on the same rota."""
    user = User.objects.create_user("approver2", password="pw-approver2-1234")
    user.groups.add(Group.objects.get(name="approver"))
    personas["approver2"] = settled(user)
    return personas["approver2"]


@pytest.fixture
def own(requests):
    """The night shift's case: the approver on call asks for it (two messages: over
    APPROVAL_OVER, so it waits for a second person)."""
    return requests.make(by="approver")


def _break(personas, request, by="approver", reason=REASON, confirm=True):
    return break_glass_execute(actor=personas[by], request=request, reason=reason, confirm=confirm)


def _told(kind):
    """Who got `kind`'s alert in their bell."""
    return set(
        AlertDelivery.objects.filter(alert__kind=kind, channel=AlertDelivery.CONSOLE).values_list(
            "user__username", flat=True
        )
    )


def test_it_is_off_by_default_and_refused_then(personas, own, settings):
    assert settings.BREAK_GLASS is False

    with pytest.raises(PermissionDenied, match="break-glass is off"):
        _break(personas, own)

    assert ActionRequest.objects.get(id=own.id).status == ActionRequest.PENDING
    assert not AuditEntry.objects.filter(action="request.break_glass").exists()


def test_an_approver_may_break_the_glass_on_their_own_request_when_it_is_on(on, personas, own):
    done = _break(personas, own)

    assert done.status == ActionRequest.APPROVED
    assert done.decided_by == done.break_glass_by == done.requester == personas["approver"]
    assert done.break_glass_reason == REASON
    assert done.break_glass_at == done.decided_at
    assert done.review_due_at == done.break_glass_at + timedelta(hours=12)
    assert done.expires_at == done.decided_at + timedelta(hours=24)
    assert (done.reviewed_by, done.reviewed_at, done.review_agrees) == (None, None, None)


def test_the_execution_is_handed_to_the_spark_worker_once_committed(
    on, personas, own, monkeypatch, django_capture_on_commit_callbacks
):
    enqueued = []
    monkeypatch.setattr("console.decisions.break_glass.execute_enqueue", enqueued.append)

    with django_capture_on_commit_callbacks(execute=True):
        _break(personas, own)

    assert enqueued == [own.id]


@pytest.mark.parametrize("persona", ["viewer", "operator", "auditor", "outsider"])
def test_someone_neither_approver_nor_administrator_may_not_break_the_glass(
    on, personas, requests, persona
):
    request = requests.make()

    with pytest.raises(PermissionDenied, match="only an approver or an administrator"):
        _break(personas, request, by=persona)

    assert ActionRequest.objects.get(id=request.id).status == ActionRequest.PENDING


def test_an_administrator_on_call_may_break_the_glass(on, personas, requests):
    request = requests.make()

    broken = _break(personas, request, by="admin")

    assert (broken.status, broken.break_glass_by) == (ActionRequest.APPROVED, personas["admin"])


@pytest.mark.parametrize("reason", ["", "   \n", None])
def test_the_reason_is_required(on, personas, own, reason):
    with pytest.raises(ValidationError, match="the reason is required"):
        _break(personas, own, reason=reason)

    assert ActionRequest.objects.get(id=own.id).status == ActionRequest.PENDING


@pytest.mark.parametrize("confirm", [False, None, "yes"])
def test_the_confirmation_is_required_and_names_the_consequence(on, personas, own, confirm):
    with pytest.raises(ValidationError) as refused:
        _break(personas, own, confirm=confirm)

    said = str(refused.value)
    assert "2 messages will be reprocessed now, without a second person's approval" in said
    assert "Every other approver and administrator is told at once" in said
    assert "someone else must review the decision within 12 hours" in said
    assert ActionRequest.objects.get(id=own.id).status == ActionRequest.PENDING


def test_the_consequence_says_what_an_end_with_error_does(on, personas, requests):
    request = requests.make(
        by="approver", kind="end_with_error", error_code="127", error_description="gone"
    )

    with pytest.raises(ValidationError, match="2 messages will be ended with an error"):
        _break(personas, request, confirm=False)


def test_a_request_that_no_longer_waits_cannot_be_broken_into(on, personas, requests):
    request = requests.make()
    action_request_approve(actor=personas["approver"], request=request)

    with pytest.raises(ValidationError, match="no longer waiting for approval"):
        _break(personas, ActionRequest.objects.get(id=request.id))


def test_the_approver_cool_down_applies_to_breaking_the_glass(on, personas, requests):
    newcomer = User.objects.create_user("newcomer", password="pw-newcomer-1234")
    newcomer.groups.add(Group.objects.get(name="approver"))
    personas["newcomer"] = newcomer
    request = requests.make()

    with pytest.raises(PermissionDenied, match="may approve from"):
        _break(personas, request, by="newcomer")

    assert ActionRequest.objects.get(id=request.id).status == ActionRequest.PENDING


def test_every_other_approver_and_administrator_is_alerted_at_once_the_breaker_not(
    on, personas, approver2, own
):
    _break(personas, own)

    assert _told(E.REQUEST_BREAK_GLASS) == {"approver2", "admin"}
    alert = Alert.objects.get(kind=E.REQUEST_BREAK_GLASS)
    assert "approver broke the glass" in alert.title
    assert REASON in alert.text
    assert alert.link == f"/requests/{own.id}/"


def test_a_requester_who_is_someone_else_hears_their_request_was_executed_alone(
    on, personas, requests
):
    request = requests.make()  # the operator's

    _break(personas, request)

    assert _told(E.REQUEST_BREAK_GLASS) == {"admin"}  # an operator is not told by default
    (approved,) = AlertDelivery.objects.filter(alert__kind=E.REQUEST_APPROVED)
    assert approved.user == personas["operator"]
    assert "executed by approver alone (break-glass)" in approved.alert.title


def test_the_review_is_neither_the_breakers_nor_the_requesters(on, personas, approver2, requests):
    request = _break(personas, requests.make(by="approver2"))

    with pytest.raises(PermissionDenied, match="not the one who broke the glass"):
        break_glass_review(actor=personas["approver"], request=request, agrees=True)
    with pytest.raises(PermissionDenied, match="not the requester"):
        break_glass_review(actor=personas["approver2"], request=request, agrees=True)
    for persona in ("viewer", "operator", "auditor", "outsider"):
        with pytest.raises(PermissionDenied, match="an approver or an administrator"):
            break_glass_review(actor=personas[persona], request=request, agrees=True)

    reviewed = break_glass_review(actor=personas["admin"], request=request, agrees=True)

    assert (reviewed.reviewed_by, reviewed.review_agrees) == (personas["admin"], True)
    assert reviewed.reviewed_at is not None


def test_disagreeing_says_why(on, personas, approver2, own):
    request = _break(personas, own)

    with pytest.raises(ValidationError, match="disagreeing says why"):
        break_glass_review(actor=personas["approver2"], request=request, agrees=False, comment=" ")
    reviewed = break_glass_review(
        actor=personas["approver2"],
        request=request,
        agrees=False,
        comment="the shop was up again at 02:10: it could have waited",
    )

    assert reviewed.review_agrees is False
    assert reviewed.review_comment == "the shop was up again at 02:10: it could have waited"


def test_a_decision_is_reviewed_once(on, personas, approver2, own):
    request = _break(personas, own)
    break_glass_review(actor=personas["approver2"], request=request, agrees=True)

    with pytest.raises(ValidationError, match="reviewed already"):
        break_glass_review(actor=personas["admin"], request=request, agrees=False, comment="no")

    assert ActionRequest.objects.get(id=own.id).reviewed_by == personas["approver2"]


def test_a_request_approved_by_a_second_person_has_no_review(on, personas, requests):
    request = action_request_approve(actor=personas["approver"], request=requests.make())

    with pytest.raises(ValidationError, match="not executed by break-glass"):
        break_glass_review(actor=personas["admin"], request=request, agrees=True)


def test_every_step_is_in_the_audit_trail(on, personas, own):
    request = _break(personas, own)
    break_glass_overdue_sweep(now=request.review_due_at + timedelta(minutes=1))
    break_glass_review(
        actor=personas["admin"], request=request, agrees=False, comment="it could have waited"
    )

    entries = list(AuditEntry.objects.filter(target_type="request", target_id=str(own.id)))
    assert [(e.action, e.actor) for e in entries] == [
        ("request.created", "approver"),
        ("request.break_glass", "approver"),
        ("request.break_glass_review_overdue", "system"),
        ("request.break_glass_reviewed", "admin"),
    ]
    broken, _, reviewed = entries[1:]
    assert broken.details["comment"] == REASON
    assert "2 messages will be reprocessed now" in broken.details["consequence"]
    assert broken.details["requester"] == "approver"
    assert broken.details["ids_sha256"] == own.ids_sha256
    assert broken.details["review_due_at"]
    assert reviewed.details == {
        "agrees": False,
        "comment": "it could have waited",
        "break_glass_by": "approver",
        "overdue": True,
    }
    assert audit_verify().ok


def test_an_overdue_review_raises_its_alert_once(on, personas, approver2, own):
    request = _break(personas, own)
    due = request.review_due_at

    assert break_glass_overdue_sweep(now=due - timedelta(minutes=1)) == []
    assert break_glass_overdue_sweep(now=due + timedelta(minutes=1)) == [own.id]
    assert break_glass_overdue_sweep(now=due + timedelta(hours=6)) == []

    (alert,) = Alert.objects.filter(kind=E.REQUEST_REVIEW_OVERDUE)
    assert "is overdue" in alert.title
    # Told: those who may review it (the breaker, here its requester too, may not).
    assert _told(E.REQUEST_REVIEW_OVERDUE) == {"approver2", "admin"}
    assert AuditEntry.objects.filter(action="request.break_glass_review_overdue").count() == 1
    assert ActionRequest.objects.get(id=own.id).review_overdue_alerted_at == due + timedelta(
        minutes=1
    )


def test_a_review_in_time_raises_no_overdue_alert(on, personas, own):
    request = _break(personas, own)
    break_glass_review(actor=personas["admin"], request=request, agrees=True)

    assert break_glass_overdue_sweep(now=request.review_due_at + timedelta(hours=1)) == []
    assert not Alert.objects.filter(kind=E.REQUEST_REVIEW_OVERDUE).exists()


def test_unreviewed_decisions_are_listed_until_they_are_reviewed(on, personas, approver2, own):
    request = _break(personas, own)

    (listed,) = break_glass_unreviewed()
    assert (listed.id, listed.review_overdue) == (own.id, False)
    (late,) = break_glass_unreviewed(now=request.review_due_at)
    assert late.review_overdue is True

    break_glass_review(actor=personas["approver2"], request=request, agrees=True)

    assert break_glass_unreviewed() == []


def test_metrics_count_the_unreviewed_decisions_and_the_overdue_ones(on, personas, approver2, own):
    from tests.metrics.conftest import scrape, value

    def unreviewed():
        scraped = scrape()
        return [
            value(scraped, "antidote_break_glass_unreviewed", overdue=overdue)
            for overdue in ("false", "true")
        ]

    assert unreviewed() == [0, 0]
    request = _break(personas, own)
    assert unreviewed() == [1, 0]

    ActionRequest.objects.filter(id=request.id).update(
        review_due_at=request.break_glass_at - timedelta(minutes=1)
    )
    assert unreviewed() == [0, 1]

    break_glass_review(actor=personas["approver2"], request=request, agrees=True)
    assert unreviewed() == [0, 0]


def test_the_overdue_check_runs_on_the_default_worker_with_the_alert_watches(settings, db):
    from console.decisions.tasks import break_glass_overdue_task
    from workers.celery import app

    app.finalize()  # as a worker or beat does when it starts: the schedule is made then
    assert "workers.tasks.break_glass_overdue_task" not in app.conf.task_routes  # default queue
    entry = app.conf.beat_schedule["break-glass-overdue"]
    assert entry["task"] == "workers.tasks.break_glass_overdue_task"
    assert entry["schedule"] == float(settings.ALERTS_WATCH_SECONDS)
    assert break_glass_overdue_task() == []
