"""Action requests: create (freezing the scope), approve or reject (four eyes), withdraw.

Every step is claimed with a conditional update, so two people acting at once cannot both win,
and every step is in the audit trail. Execution (chunks on Spark) starts only from APPROVED,
before the approval expires."""

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from console.access.rights import approver_cooldown_check
from console.audit.services import audit_record
from console.browse.services import message_body_read_record
from console.decisions.models import ActionRequest as R
from console.decisions.scope import scope_freeze
from console.decisions.tasks import execute_enqueue
from console.permissions import APPROVE_REQUESTS, MAKE_REQUESTS
from console.queues.models import Queue

MAX_CANARY = 10_000


@dataclass(frozen=True)
class Action:
    kind: str
    target_queue: str = ""
    edited_body: bytes | None = None
    error_code: str = ""
    error_description: str = ""


def approval_needed(*, action, count):
    """The setting: every request over APPROVAL_OVER messages, and every end with error."""
    if action == R.END and settings.APPROVE_END_WITH_ERROR:
        return True
    return count > settings.APPROVAL_OVER


def _check_action(action, count):
    if action.kind not in dict(R.ACTIONS):
        raise ValidationError(f"action must be one of {', '.join(dict(R.ACTIONS))}")
    if action.kind != R.REPROCESS and (action.target_queue or action.edited_body is not None):
        raise ValidationError("only reprocess takes a target queue or an edited body")
    if action.target_queue and not Queue.objects.filter(name=action.target_queue).exists():
        raise ValidationError(f"there is no queue {action.target_queue!r} to reprocess to")
    if action.edited_body is not None and count != 1:
        raise ValidationError("an edited body is for a request on exactly one message")
    if action.edited_body is not None and len(action.edited_body) > settings.MAX_BODY_BYTES:
        raise ValidationError(f"the edited body is over {settings.MAX_BODY_BYTES} bytes")
    if action.kind == R.END and not (action.error_code and action.error_description):
        raise ValidationError("ending with an error takes an error code and a description")
    if action.kind != R.END and (action.error_code or action.error_description):
        raise ValidationError("only end with error takes an error code and description")


def _check_options(action, rate_limit, canary):
    if action.kind != R.REPROCESS and (rate_limit or canary):
        raise ValidationError("a rate limit and a canary are for reprocessing")
    if rate_limit is not None and (not isinstance(rate_limit, int) or rate_limit < 1):
        raise ValidationError("the rate limit is a whole number of messages a second, 1 or more")
    if not isinstance(canary, int) or canary < 0:
        raise ValidationError("the canary is a whole number of messages, 0 for none")
    if canary > MAX_CANARY:
        raise ValidationError(f"a canary is at most {MAX_CANARY} messages")


def action_request_create(*, actor, scope, action, comment, rate_limit=None, canary=0):
    """Freeze the scope into an exact id set and record the request; it is APPROVED at once
    when it needs no second person, PENDING otherwise. An approved request starts executing
    once the transaction commits."""
    if not actor.has_perm(MAKE_REQUESTS):
        raise PermissionDenied("you may not request actions")
    if not comment or not comment.strip():
        raise ValidationError("a request says why: the comment is required")
    _check_options(action, rate_limit, canary)
    frozen = scope_freeze(scope, actor=actor)
    _check_action(action, frozen.count)
    needs = approval_needed(action=action.kind, count=frozen.count)
    with transaction.atomic():
        request = R.objects.create(
            action=action.kind,
            target_queue=action.target_queue,
            edited_body=action.edited_body,
            error_code=action.error_code,
            error_description=action.error_description,
            comment=comment.strip(),
            scope=scope,
            ids_path=frozen.ids_path,
            ids_sha256=frozen.ids_sha256,
            count=frozen.count,
            breakdown=frozen.breakdown,
            sample=frozen.sample,
            requester=actor,
            status=R.PENDING if needs else R.APPROVED,
            needs_approval=needs,
            expires_at=None if needs else timezone.now() + _ttl(),
            rate_limit=rate_limit,
            canary=canary,
        )
        if request.status == R.APPROVED:
            transaction.on_commit(lambda: execute_enqueue(request.id), robust=True)
        audit_record(
            actor=actor,
            action="request.created",
            target_type="request",
            target_id=request.id,
            details=_summary(request),
        )
    return request


def _ttl():
    return timedelta(hours=settings.APPROVAL_TTL_HOURS)


def _summary(request):
    return {
        "action": request.action,
        "target_queue": request.target_queue,
        "count": request.count,
        "ids_sha256": request.ids_sha256,
        "breakdown": request.breakdown,
        "scope": request.scope,
        "comment": request.comment,
        "error_code": request.error_code,
    }


def _decide(*, actor, request, comment, to_status, audit_action):
    if not actor.has_perm(APPROVE_REQUESTS):
        raise PermissionDenied("you may not approve or reject requests")
    if actor.pk == request.requester_id:
        raise PermissionDenied("four eyes: a request is approved or rejected by someone else")
    if to_status == R.APPROVED:
        approver_cooldown_check(actor)
    now = timezone.now()
    with transaction.atomic():
        won = R.objects.filter(id=request.id, status=R.PENDING).update(
            status=to_status,
            decided_by=actor,
            decided_at=now,
            decision_comment=comment or "",
            expires_at=now + _ttl() if to_status == R.APPROVED else None,
        )
        if won != 1:
            raise ValidationError(f"request {request.id} is no longer waiting for approval")
        if to_status == R.APPROVED:
            transaction.on_commit(lambda: execute_enqueue(request.id), robust=True)
        audit_record(
            actor=actor,
            action=audit_action,
            target_type="request",
            target_id=request.id,
            details={
                "comment": comment or "",
                "count": request.count,
                "ids_sha256": request.ids_sha256,
            },
        )
    request.refresh_from_db()
    return request


def action_request_approve(*, actor, request, comment=""):
    """Four eyes: someone with the approve permission who is not the requester approves the
    frozen set exactly as it is (count, breakdown, sample, hash)."""
    return _decide(
        actor=actor,
        request=request,
        comment=comment,
        to_status=R.APPROVED,
        audit_action="request.approved",
    )


def action_request_reject(*, actor, request, comment):
    if not comment or not comment.strip():
        raise ValidationError("a rejection says why: the comment is required")
    return _decide(
        actor=actor,
        request=request,
        comment=comment,
        to_status=R.REJECTED,
        audit_action="request.rejected",
    )


def action_request_withdraw(*, actor, request, comment=""):
    """The requester takes a request back before it runs."""
    if actor.pk != request.requester_id:
        raise PermissionDenied("only the requester withdraws a request")
    with transaction.atomic():
        won = R.objects.filter(id=request.id, status__in=[R.PENDING, R.APPROVED]).update(
            status=R.WITHDRAWN, decided_at=timezone.now()
        )
        if won != 1:
            raise ValidationError(f"request {request.id} can no longer be withdrawn")
        audit_record(
            actor=actor,
            action="request.withdrawn",
            target_type="request",
            target_id=request.id,
            details={"comment": comment or ""},
        )
    request.refresh_from_db()
    return request


def action_request_cancel(*, actor, request, comment=""):
    """Stop a request that was approved: at once if it is not executing (approved and not yet
    started, or waiting for its canary); otherwise the execution stops before its next chunk
    (chunks already committed stay decided). The requester or an approver may cancel."""
    if actor.pk != request.requester_id and not actor.has_perm(APPROVE_REQUESTS):
        raise PermissionDenied("only the requester or an approver cancels a request")
    now = timezone.now()
    with transaction.atomic():
        stopped = R.objects.filter(id=request.id, status__in=[R.APPROVED, R.CANARY]).update(
            status=R.CANCELLED, cancelled_by=actor, finished_at=now
        )
        asked = 0
        if not stopped:
            asked = R.objects.filter(id=request.id, status=R.RUNNING).update(
                cancel_requested=True, cancelled_by=actor
            )
        if not (stopped or asked):
            raise ValidationError(f"request {request.id} is not approved or running")
        audit_record(
            actor=actor,
            action="request.cancelled" if stopped else "request.cancel_requested",
            target_type="request",
            target_id=request.id,
            details={"comment": comment or ""},
        )
    request.refresh_from_db()
    return request


def action_request_edited_body_read(*, actor, request, via):
    """The edited body `request` carries, for `actor` to read, the read recorded like any other
    body read, against the message it edits: an edited body is for a request on exactly one
    message, the one in its sample."""
    message_id = request.sample[0]["message_id"] if request.sample else ""
    message_body_read_record(actor=actor, message_id=message_id, via=via, request=request)
    return bytes(request.edited_body)
