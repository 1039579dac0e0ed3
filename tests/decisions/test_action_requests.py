"""Action requests: the scope frozen into an exact id set, four eyes, expiry, withdrawal."""

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from console.audit.models import AuditEntry
from console.audit.selectors import audit_verify
from console.decisions.execution import action_request_claim_for_execution
from console.decisions.models import ActionRequest
from console.decisions.scope import frozen_ids, frozen_intact, ids_digest
from console.decisions.services import (
    Action,
    action_request_approve,
    action_request_create,
    action_request_reject,
    action_request_withdraw,
)
from console.readmodels.models import MessageIndex

T0 = timezone.now().replace(microsecond=0)


def _request(personas, scope, kind="reprocess", **action):
    return action_request_create(
        actor=personas["operator"],
        scope=scope,
        action=Action(kind=kind, **action),
        comment="fixed the handler",
    )


def test_a_group_scope_is_frozen_into_its_quarantined_ids_with_hash_breakdown_and_sample(
    personas, quarantine
):
    request = _request(personas, {"kind": "group", "group": "g-missing"})
    expected = ["m-00", "m-02", "m-04", "m-06", "m-08"]  # m-10 is WAIT: not quarantined
    assert [i for ids in frozen_ids(request.ids_path) for i in ids] == expected
    assert request.count == 5
    assert request.ids_sha256 == ids_digest(expected)
    assert request.breakdown == {"queues": {"orders": 4, "payments": 1}, "groups": {"g-missing": 5}}
    assert [s["message_id"] for s in request.sample] == expected
    assert (request.status, request.needs_approval) == (ActionRequest.PENDING, True)


def test_a_filter_scope_freezes_what_the_browser_filter_matches(personas, quarantine):
    request = _request(personas, {"kind": "filter", "filters": {"queue": "payments"}})
    assert [i for ids in frozen_ids(request.ids_path) for i in ids] == ["m-08", "m-09"]


def test_one_message_needs_no_approval_but_ending_with_an_error_does(personas, quarantine):
    one = _request(personas, {"kind": "message", "id": "m-01"})
    assert (one.status, one.needs_approval) == (ActionRequest.APPROVED, False)
    end = _request(
        personas,
        {"kind": "message", "id": "m-01"},
        kind="end_with_error",
        error_code="127",
        error_description="Unable to process message.",
    )
    assert (end.status, end.needs_approval) == (ActionRequest.PENDING, True)


def test_self_approval_is_refused(personas, quarantine):
    personas["operator"].groups.add(*personas["approver"].groups.all())
    request = _request(personas, {"kind": "selection", "ids": ["m-01", "m-03"]})
    with pytest.raises(PermissionDenied, match="four eyes"):
        action_request_approve(actor=personas["operator"], request=request)
    assert ActionRequest.objects.get(id=request.id).status == ActionRequest.PENDING


def test_an_operator_cannot_approve_and_an_approver_can(personas, quarantine):
    request = _request(personas, {"kind": "selection", "ids": ["m-01", "m-03"]})
    with pytest.raises(PermissionDenied):
        action_request_approve(actor=personas["viewer"], request=request)
    approved = action_request_approve(
        actor=personas["approver"], request=request, comment="looks right"
    )
    assert approved.status == ActionRequest.APPROVED
    assert approved.expires_at == approved.decided_at + timedelta(hours=24)
    with pytest.raises(ValidationError, match="no longer waiting"):
        action_request_reject(actor=personas["approver"], request=request, comment="too late")


def test_an_expired_approval_does_not_run(personas, quarantine):
    request = _request(personas, {"kind": "selection", "ids": ["m-01", "m-03"]})
    action_request_approve(actor=personas["approver"], request=request)
    later = timezone.now() + timedelta(hours=25)
    assert action_request_claim_for_execution(request_id=request.id, now=later) is None
    assert ActionRequest.objects.get(id=request.id).status == ActionRequest.EXPIRED


def test_an_approved_request_is_taken_into_execution_once(personas, quarantine):
    request = _request(personas, {"kind": "message", "id": "m-01"})
    assert action_request_claim_for_execution(request_id=request.id).status == "running"
    assert action_request_claim_for_execution(request_id=request.id) is None


def test_the_frozen_set_cannot_change_unnoticed_after_approval(personas, quarantine, lake_root):
    request = _request(personas, {"kind": "selection", "ids": ["m-01", "m-03"]})
    action_request_approve(actor=personas["approver"], request=request)
    assert frozen_intact(request)
    # New quarantined messages matching the scope do not join it...
    MessageIndex.objects.filter(message_id="m-05").update(group_id="g-other")
    assert [i for ids in frozen_ids(request.ids_path) for i in ids] == ["m-01", "m-03"]
    # ... and a rewritten id file no longer matches the approved hash.
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"message_id": ["m-01", "m-03", "m-05"]}), lake_root / request.ids_path)
    assert not frozen_intact(request)


def test_only_the_requester_withdraws_and_only_before_it_runs(personas, quarantine):
    request = _request(personas, {"kind": "selection", "ids": ["m-01", "m-03"]})
    with pytest.raises(PermissionDenied):
        action_request_withdraw(actor=personas["approver"], request=request)
    assert (
        action_request_withdraw(actor=personas["operator"], request=request).status
        == ActionRequest.WITHDRAWN
    )
    with pytest.raises(ValidationError):
        action_request_approve(actor=personas["approver"], request=request)


@pytest.mark.parametrize(
    ("scope", "action", "message"),
    [
        ({"kind": "group", "group": "nope"}, {}, "no quarantined message"),
        ({"kind": "everything"}, {}, "a scope has a kind"),
        ({"kind": "message", "id": "m-01"}, {"target_queue": "nowhere"}, "no queue 'nowhere'"),
        ({"kind": "selection", "ids": ["m-01", "m-03"]}, {"edited_body": b"{}"}, "exactly one"),
    ],
)
def test_a_bad_request_gets_a_clear_error(personas, quarantine, scope, action, message):
    with pytest.raises((ValidationError, ValueError), match=message):
        _request(personas, scope, **action)


def test_every_step_is_in_the_audit_trail(personas, quarantine):
    request = _request(personas, {"kind": "selection", "ids": ["m-01", "m-03"]})
    action_request_reject(actor=personas["approver"], request=request, comment="wrong group")
    assert list(AuditEntry.objects.values_list("actor", "action")) == [
        ("operator", "request.created"),
        ("approver", "request.rejected"),
    ]
    assert AuditEntry.objects.first().details["ids_sha256"] == request.ids_sha256
    assert audit_verify().ok
