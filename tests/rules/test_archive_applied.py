"""An archive rule applied to real quarantined messages (the decisions' desk: real ingest,
delivery runs and refresh on Spark): it FAILs what stood untouched through a request of its own,
approved by the rule's approval and executed as any request, leaves a message under
investigation alone, and every step is in the audit trail and on the messages' history."""

from datetime import timedelta

import pytest
from django.urls import reverse

from console.audit.models import AuditEntry
from console.notes.models import MESSAGE
from console.notes.services import investigation_take
from console.readmodels.models import MessageIndex
from console.rules.applying import archive_apply
from console.rules.models import RuleApplication
from tests.browse.conftest import login
from tests.rules.conftest import rule_audit

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_the_archive_fails_what_stood_untouched_through_a_request_its_approval_approved(
    desk, rules, personas
):
    desk.queue("orders", handler="tests.handlers_for_tests.scripted")
    ids = desk.quarantine("orders", ["permanent"] * 3)
    row = MessageIndex.objects.get(message_id=ids[0])
    investigation_take(actor=personas["operator"], kind=MESSAGE, target_id=ids[2])
    rule = rules.active(queue="orders", group=row.group_id, days=30)

    assert archive_apply(rule=rule, now=row.updated_at + timedelta(days=29)) is None
    application = archive_apply(rule=rule, now=row.updated_at + timedelta(days=30))

    request = application.request
    assert (request.action, request.count, request.status) == ("fail", 2, "approved")
    assert (request.requester, request.decided_by) == (personas["admin"], personas["approver"])
    assert request.scope["kind"] == "standing_rule"
    assert application.left_alone == {"investigated": 1, "touched": 0, "exhausted": 0, "held": 0}
    request = desk.execute(request)
    assert (request.status, request.done) == ("done", 2)
    assert [desk.state(i)["state"] for i in ids] == ["FAIL", "FAIL", "NDLV"]
    assert {e["message_id"] for e in desk.decision_events(request.id)} == set(ids[:2])
    # The next day finds nothing left to archive: what it failed is final, the rest is taken.
    assert archive_apply(rule=rule, now=row.updated_at + timedelta(days=31)) is None
    assert RuleApplication.objects.count() == 1

    assert rule_audit(rule) == [
        ("rule.proposed", "admin"),
        ("rule.approved", "approver"),
        ("rule.applied", "system"),
    ]
    applied = AuditEntry.objects.get(target_type="rule", action="rule.applied")
    assert (applied.details["request"], applied.details["count"]) == (request.id, 2)
    created = AuditEntry.objects.get(
        target_type="request", target_id=str(request.id), action="request.created"
    )
    assert (created.actor, created.details["standing_rule"]) == ("system", rule.id)

    history = login(personas["viewer"]).get(reverse("message-detail", args=[ids[0]]))
    page = history.content.decode()
    rule_link = f'href="{reverse("rule-detail", args=[rule.id])}"'
    assert f"Made by standing rule {rule.id} (archive archive-rule)" in page and rule_link in page
    assert f"failed (request {request.id}, approved by approver): standing rule" in page
    untouched = login(personas["viewer"]).get(reverse("message-detail", args=[ids[2]]))
    assert rule_link not in untouched.content.decode()
