"""Action requests: create (freezing the scope), approve or reject (four eyes), withdraw.

Every step is claimed with a conditional update, so two people acting at once cannot both win,
and every step is in the audit trail. Execution (chunks on Spark) starts only from APPROVED,
before the approval expires."""

import dataclasses
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from console.access.rights import approver_cooldown_check
from console.browse.services import message_body_read_record
from console.decisions.approval import approval_policy_locked
from console.decisions.models import ActionRequest as R
from console.decisions.request_audit import request_audit
from console.decisions.scope import scope_freeze
from console.decisions.targets import redrive_target_clean
from console.decisions.tasks import execute_enqueue
from console.permissions import APPROVE_REQUESTS, MAKE_REQUESTS
from console.queues.models import Queue

MAX_CANARY = 10_000
# A progressive redrive: the steps the request form and the API offer, at most MAX_STEPS of at
# most MAX_CANARY messages each (a step is one chunk, watched whole), then the rest; each next
# step goes only when at most this percentage of the last step's messages failed again.
DEFAULT_STEPS = (1, 10, 100, 1000)
MAX_STEPS = 10
DEFAULT_REFAILURE_THRESHOLD = 5.0


@dataclass(frozen=True)
class Action:
    kind: str
    target_queue: str = ""
    edited_body: bytes | None = None
    error_code: str = ""
    error_description: str = ""
    # Where the broker sinks send the messages instead of their origin: {key: text} of
    # REDRIVE_TARGET_KEYS; None for the origin.
    redrive_target: dict | None = None


def _check_action(action, count):
    if action.kind not in dict(R.ACTIONS):
        raise ValidationError(f"action must be one of {', '.join(dict(R.ACTIONS))}")
    if action.kind != R.REPROCESS and (action.target_queue or action.edited_body is not None):
        raise ValidationError("only reprocess takes a target queue or an edited body")
    if action.kind != R.REPROCESS and action.redrive_target:
        raise ValidationError("only reprocess takes a redrive target")
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


def _whole(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_options(action, rate_limit, canary, steps, refailure_threshold):
    """The execution options, checked; returns (steps, threshold) as the request stores them."""
    if action.kind != R.REPROCESS and (rate_limit or canary or steps is not None):
        raise ValidationError("a rate limit, a canary and steps are for reprocessing")
    if action.kind != R.REPROCESS and refailure_threshold is not None:
        raise ValidationError("a re-failure threshold is for reprocessing in steps")
    if rate_limit is not None and (not _whole(rate_limit) or rate_limit < 1):
        raise ValidationError("the rate limit is a whole number of messages a second, 1 or more")
    if not _whole(canary) or canary < 0:
        raise ValidationError("the canary is a whole number of messages, 0 for none")
    if canary > MAX_CANARY:
        raise ValidationError(f"a canary is at most {MAX_CANARY} messages")
    if canary and steps is not None:
        raise ValidationError("give a canary or steps, not both (a canary of N is the steps [N])")
    if steps is not None:
        if not isinstance(steps, list | tuple) or not 1 <= len(steps) <= MAX_STEPS:
            raise ValidationError(f"the steps are a list of 1 to {MAX_STEPS} message counts")
        if not all(_whole(size) and 1 <= size <= MAX_CANARY for size in steps):
            raise ValidationError(f"each step is a whole number of messages from 1 to {MAX_CANARY}")
    if refailure_threshold is not None:
        if not (canary or steps):
            raise ValidationError("a re-failure threshold is for a request with steps or a canary")
        if (
            not isinstance(refailure_threshold, int | float)
            or isinstance(refailure_threshold, bool)
            or not 0 <= refailure_threshold <= 100
        ):
            raise ValidationError("the re-failure threshold is a percentage from 0 to 100")
    if canary:
        # A canary's rule: none of its messages may fail again, unless a threshold says else.
        return [canary], float(refailure_threshold or 0)
    if steps:
        threshold = DEFAULT_REFAILURE_THRESHOLD
        return list(steps), float(threshold if refailure_threshold is None else refailure_threshold)
    return [], 0.0


def action_request_create(
    *,
    actor,
    scope,
    action,
    comment,
    rate_limit=None,
    canary=0,
    steps=None,
    refailure_threshold=None,
):
    """Freeze the scope into an exact id set and record the request; it is APPROVED at once
    when it needs no second person, PENDING otherwise. An approved request starts executing
    once the transaction commits.

    A reprocess may go in `steps` (message counts, then the rest), each next step only when at
    most `refailure_threshold` percent (DEFAULT_REFAILURE_THRESHOLD when not given) of the last
    step's messages failed again; `canary` N is the steps [N] with a threshold of 0."""
    if not actor.has_perm(MAKE_REQUESTS):
        raise PermissionDenied("you may not request actions")
    if not comment or not comment.strip():
        raise ValidationError("a request says why: the comment is required")
    steps, refailure_threshold = _check_options(
        action, rate_limit, canary, steps, refailure_threshold
    )
    action = dataclasses.replace(action, redrive_target=redrive_target_clean(action.redrive_target))
    frozen = scope_freeze(scope, actor=actor)
    _check_action(action, frozen.count)
    with transaction.atomic():
        approval = approval_policy_locked(
            actor=actor,
            action=action,
            count=frozen.count,
            queues=frozen.breakdown.get("queues", {}),
        )
        needs = approval.needed
        request = R.objects.create(
            action=action.kind,
            target_queue=action.target_queue,
            redrive_target=action.redrive_target,
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
            approval_reason=approval.reason,
            expires_at=None if needs else timezone.now() + _ttl(),
            rate_limit=rate_limit,
            steps=steps,
            refailure_threshold=refailure_threshold,
        )
        if request.status == R.APPROVED:
            transaction.on_commit(lambda: execute_enqueue(request.id), robust=True)
        request_audit(
            request,
            "request.created",
            actor=actor,
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
        "approval_reason": request.approval_reason,
        **_execution_options(request),
    }


def _execution_options(request):
    """What the approver approves besides the set: where it goes, the pace and the steps."""
    if request.action != R.REPROCESS:
        return {}
    return {
        "redrive_target": request.redrive_target,
        "rate_limit": request.rate_limit,
        "steps": request.steps,
        "refailure_threshold": request.refailure_threshold if request.steps else None,
    }


# What the audit trail calls each decision.
_DECIDED = {R.APPROVED: "request.approved", R.REJECTED: "request.rejected"}


def _decide(*, actor, request, comment, to_status):
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
        request_audit(
            request,
            _DECIDED[to_status],
            actor=actor,
            details={
                "comment": comment or "",
                "count": request.count,
                "ids_sha256": request.ids_sha256,
                **_execution_options(request),
            },
        )
    request.refresh_from_db()
    return request


def action_request_approve(*, actor, request, comment=""):
    """Four eyes: someone with the approve permission who is not the requester approves the
    frozen set exactly as it is (count, breakdown, sample, hash)."""
    return _decide(actor=actor, request=request, comment=comment, to_status=R.APPROVED)


def action_request_reject(*, actor, request, comment):
    if not comment or not comment.strip():
        raise ValidationError("a rejection says why: the comment is required")
    return _decide(actor=actor, request=request, comment=comment, to_status=R.REJECTED)


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
        request_audit(
            request,
            "request.withdrawn",
            actor=actor,
            details={"comment": comment or ""},
        )
    request.refresh_from_db()
    return request


def action_request_cancel(*, actor, request, comment=""):
    """Stop a request that was approved: at once if it is not executing (approved and not yet
    started, or waiting for a step's outcome); otherwise the execution stops before its next chunk
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
        request_audit(
            request,
            "request.cancelled" if stopped else "request.cancel_requested",
            actor=actor,
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
