"""Action requests: create (freezing the scope), approve or reject (four eyes), withdraw.

Every step is claimed with a conditional update, so two people acting at once cannot both win,
and every step is in the audit trail. Execution (chunks on Spark) starts only from APPROVED,
before the approval expires."""

import dataclasses
import json
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from console.access.rights import approver_cooldown_check
from console.browse.headers import header_changes
from console.browse.selectors import message_headers_text
from console.browse.services import message_body_read_record
from console.decisions.approval import approval_policy_locked
from console.decisions.header_edits import headers_edited, headers_parse, locked_names
from console.decisions.models import ActionRequest as R
from console.decisions.patch_preview import PREVIEW_SIZE, patch_preview, preview_refusal
from console.decisions.request_audit import request_audit
from console.decisions.scope import scope_freeze
from console.decisions.standing import redirect_for
from console.decisions.targets import redrive_target_clean
from console.decisions.tasks import execute_enqueue
from console.permissions import APPROVE_REQUESTS, MAKE_REQUESTS
from console.queues.models import Queue
from workers.jobs.decisions.body_edits import PatchRefused, patch_parse, patch_sha256, patch_text

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
    # One message's headers as the person wants them (console.decisions.header_edits); None to
    # keep them.
    edited_headers: dict | None = None
    # A bulk edit: a JSON Patch (RFC 6902) of each message's body, its operations as a list.
    patch: list | None = None

    @property
    def edits_one(self):
        """Edits one message's body or headers."""
        return self.edited_body is not None or self.edited_headers is not None


# A bulk edit acts on messages of the index, whose first ones its preview shows before it is
# made; a lake query's result and an earlier request's outcome are read only when frozen.
PATCH_SCOPES = ("message", "selection", "group", "filter")


def _check_action(action, count):
    if action.kind not in dict(R.ACTIONS):
        raise ValidationError(f"action must be one of {', '.join(dict(R.ACTIONS))}")
    if action.kind != R.REPROCESS and (action.target_queue or action.edits_one):
        raise ValidationError("only reprocess takes a target queue or an edited body or headers")
    if action.kind != R.REPROCESS and action.patch is not None:
        raise ValidationError("only reprocess takes a JSON Patch (a bulk edit)")
    if action.patch is not None and action.edits_one:
        raise ValidationError("give an edited body and headers, or a JSON Patch, not both")
    if action.kind != R.REPROCESS and action.redrive_target:
        raise ValidationError("only reprocess takes a redrive target")
    if action.target_queue and not Queue.objects.filter(name=action.target_queue).exists():
        raise ValidationError(f"there is no queue {action.target_queue!r} to reprocess to")
    if action.edits_one and count != 1:
        raise ValidationError("an edited body or headers is for a request on exactly one message")
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
    if action.patch is not None:
        action = dataclasses.replace(action, patch=_patch_checked(action.patch, scope))
    frozen = scope_freeze(scope, actor=actor)
    _check_action(action, frozen.count)
    # A standing redirect (console.rules) sends a reprocess back to its own queue to another
    # queue, before the edit's headers are checked against where it goes; the move was approved
    # with the rule, by a second person (R17): what must be approved here is the request as asked.
    redirect = redirect_for(action=action, frozen=frozen)
    if redirect is not None:
        action = dataclasses.replace(action, target_queue=redirect.to_queue)
    action, edited_headers, changes = _headers_frozen(action, frozen)
    preview = _preview_frozen(action, frozen)
    with transaction.atomic():
        approval = approval_policy_locked(
            actor=actor,
            action=dataclasses.replace(action, target_queue="") if redirect else action,
            count=frozen.count,
            queues=frozen.breakdown.get("queues", {}),
        )
        needs = approval.needed
        request = R.objects.create(
            action=action.kind,
            target_queue=action.target_queue,
            redrive_target=action.redrive_target,
            edited_body=action.edited_body,
            edited_headers=edited_headers,
            header_changes=changes,
            patch=patch_text(action.patch) if action.patch is not None else None,
            patch_preview=preview,
            error_code=action.error_code,
            error_description=action.error_description,
            comment=comment.strip(),
            **_frozen_fields(scope, frozen),
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
        if redirect is not None:
            redirect.record(request)
    return request


def _patch_checked(patch, scope):
    """The patch's operations, checked (workers.jobs.decisions.body_edits.patch_parse)."""
    if not isinstance(scope, dict) or scope.get("kind") not in PATCH_SCOPES:
        raise ValidationError(
            "a bulk edit acts on a selection, a failure group, a filter or one message"
        )
    try:
        return patch_parse(patch)
    except PatchRefused as exc:
        raise ValidationError(str(exc)) from None


def _headers_frozen(action, frozen):
    """(action, headers, changes): the headers the new version carries, as JSON text, and what
    the edit changes (console.browse.headers.header_changes); (action without them, None, [])
    for an edit that changes nothing. The message's queue and the queue it goes to say which
    headers are locked."""
    if action.edited_headers is None:
        return action, None, []
    (row,) = frozen.sample
    current = headers_parse(message_headers_text(message_id=row["message_id"]))
    final = headers_edited(
        current=current,
        desired=action.edited_headers,
        locked=locked_names([row["queue"], action.target_queue]),
    )
    if final is None:
        return dataclasses.replace(action, edited_headers=None), None, []
    changes = [list(change) for change in header_changes(current, final)]
    return action, json.dumps(final, ensure_ascii=False), changes


def _preview_frozen(action, frozen):
    """A bulk edit's preview on the frozen set's first messages, as the approver sees it;
    ValidationError when a sampled result cannot be its message's body."""
    if action.patch is None:
        return []
    sampled = [row["message_id"] for row in frozen.sample[:PREVIEW_SIZE]]
    rows = patch_preview(message_ids=sampled, patch=action.patch)
    refused = preview_refusal(rows)
    if refused:
        raise ValidationError(refused)
    return rows


def _ttl():
    return timedelta(hours=settings.APPROVAL_TTL_HOURS)


def _frozen_fields(scope, frozen):
    """What a request records of its scope, as asked and as frozen (however it is made)."""
    return {
        "scope": scope,
        "ids_path": frozen.ids_path,
        "ids_sha256": frozen.ids_sha256,
        "count": frozen.count,
        "breakdown": frozen.breakdown,
        "sample": frozen.sample,
    }


def action_request_create_standing(
    *, standing, scope, action, comment, steps=None, refailure_threshold=None
):
    """A request a standing rule makes (console.rules; `standing`: its Standing): the scope
    frozen as any other, and APPROVED at once by the rule's own approval, which the request
    records (the rule's proposer asks, its second person approved, R17); it starts executing
    once the transaction commits. The steps and re-failure threshold are checked as a person's."""
    steps, refailure_threshold = _check_options(action, None, 0, steps, refailure_threshold)
    frozen = scope_freeze(scope)
    _check_action(action, frozen.count)
    # A rule's reprocess is a reprocess: a standing redirect of its queue sends it on too.
    redirect = redirect_for(action=action, frozen=frozen)
    now = timezone.now()
    with transaction.atomic():
        request = R.objects.create(
            action=action.kind,
            target_queue=redirect.to_queue if redirect else "",
            comment=comment.strip(),
            **_frozen_fields(scope, frozen),
            requester=standing.requester,
            status=R.APPROVED,
            needs_approval=True,
            approval_reason=standing.approval_reason,
            decided_by=standing.approver,
            decided_at=now,
            expires_at=now + _ttl(),
            steps=steps,
            refailure_threshold=refailure_threshold,
        )
        transaction.on_commit(lambda: execute_enqueue(request.id), robust=True)
        request_audit(
            request,
            "request.created",
            actor="system",
            details={**_summary(request), "standing_rule": standing.rule_id},
        )
        if redirect is not None:
            redirect.record(request)
    return request


def progression_check(*, steps, refailure_threshold):
    """A reprocess's steps and re-failure threshold, checked as a request's are (ValidationError
    in words); returns them as a request stores them: ([], 0.0) without steps."""
    return _check_options(Action(kind=R.REPROCESS), None, 0, steps, refailure_threshold)


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
        **_edits(request),
        **_execution_options(request),
    }


def _edits(request):
    """What the audit trail keeps of an edit: the names of the headers it changes; a bulk edit's
    patch itself (not message data), and which of the preview's messages it applies to."""
    said = {}
    if request.header_changes:
        said["headers_changed"] = [name for _, name, _, _ in request.header_changes]
    if request.patch is not None:
        patch = json.loads(request.patch)
        said |= {
            "patch": patch,
            "patch_sha256": patch_sha256(patch),
            "preview": [
                {"message_id": row["message_id"], "applies": row["applies"]}
                for row in request.patch_preview
            ],
        }
    return said


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
