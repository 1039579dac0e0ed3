"""Break-glass (R17): someone who may approve executes a pending request alone, in an emergency
(the one on call at night, who may be its requester), with a reason and a confirmation that names
what will happen. Every other approver and administrator is told at once (console.alerts, from
the audit entry), and someone else, neither the one who broke the glass nor the requester, reviews
the decision within BREAK_GLASS_REVIEW_HOURS: agrees, or disagrees and says why. Past that the
scheduler alerts once (console.decisions.sweeper.break_glass_overdue_sweep).

Off unless an administrator turns BREAK_GLASS on. The claim is a conditional update, as an
approval's is: two people breaking the glass (or one approving while another breaks it) cannot
both win."""

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from console.access.rights import approver_cooldown_check
from console.decisions.models import ActionRequest as R
from console.decisions.request_audit import request_audit
from console.decisions.tasks import execute_enqueue
from console.permissions import APPROVE_REQUESTS, MANAGE_USERS
from workers.engine import actions as A


def _approver_or_admin(user):
    return user.has_perm(APPROVE_REQUESTS) or user.has_perm(MANAGE_USERS)


def may_break_glass_role(user):
    """Whether `user` holds a role that may break the glass (an approver or an administrator),
    whether BREAK_GLASS is on or not: the pages tell them it exists."""
    return _approver_or_admin(user)


def may_break_glass(user):
    """Whether `user` may break the glass at all (the request must still be pending): an
    approver or an administrator, the one on call at night, when BREAK_GLASS is on."""
    return settings.BREAK_GLASS and _approver_or_admin(user)


def may_review(user, request):
    """Whether `user` may review `request`'s break-glass decision: an approver or an
    administrator who is neither the one who broke the glass nor the requester, while the
    decision waits for its review."""
    return (
        request.break_glass_at is not None
        and request.reviewed_at is None
        and user.pk not in (request.break_glass_by_id, request.requester_id)
        and _approver_or_admin(user)
    )


def break_glass_consequence(request):
    """What breaking the glass on `request` does, in the words the confirmation names."""
    n = request.count
    what = f"{n:,} message{'s' if n != 1 else ''} will be {A.VERBS[request.action]}"
    if request.action == R.REPROCESS and request.target_queue:
        what += f" in the queue {request.target_queue}"
    if request.edited_body is not None:
        what += " with the edited body"
    if request.action == R.END:
        what += " (their senders are told, and the rest of their conversations ended)"
    return (
        f"{what[0].upper()}{what[1:]} now, without a second person's approval. Every other "
        "approver and administrator is told at once, and someone else must review the decision "
        f"within {settings.BREAK_GLASS_REVIEW_HOURS} hours."
    )


def break_glass_execute(*, actor, request, reason, confirm):
    """Approve the pending `request` alone and start it, with `reason`; `confirm` must be true:
    the actor confirmed break_glass_consequence(request). Audited as "request.break_glass",
    whose receiver alerts every other approver and administrator."""
    if not settings.BREAK_GLASS:
        raise PermissionDenied("break-glass is off: an administrator turns it on (BREAK_GLASS)")
    if not _approver_or_admin(actor):
        raise PermissionDenied("only an approver or an administrator may break the glass")
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError("breaking the glass says why: the reason is required")
    consequence = break_glass_consequence(request)
    if confirm is not True:
        raise ValidationError(f"confirm that you know what happens: {consequence}")
    approver_cooldown_check(actor)
    now = timezone.now()
    due = now + timedelta(hours=settings.BREAK_GLASS_REVIEW_HOURS)
    with transaction.atomic():
        won = R.objects.filter(id=request.id, status=R.PENDING).update(
            status=R.APPROVED,
            decided_by=actor,
            decided_at=now,
            expires_at=now + timedelta(hours=settings.APPROVAL_TTL_HOURS),
            break_glass_by=actor,
            break_glass_at=now,
            break_glass_reason=reason,
            review_due_at=due,
        )
        if won != 1:
            raise ValidationError(f"request {request.id} is no longer waiting for approval")
        transaction.on_commit(lambda: execute_enqueue(request.id), robust=True)
        request_audit(
            request,
            "request.break_glass",
            actor=actor,
            details={
                "comment": reason,
                "consequence": consequence,
                "requester": request.requester.get_username(),
                "count": request.count,
                "ids_sha256": request.ids_sha256,
                "review_due_at": due,
            },
        )
    request.refresh_from_db()
    return request


def break_glass_review(*, actor, request, agrees, comment=""):
    """Someone else's review of a break-glass decision, once: `agrees` true, or false with a
    `comment` saying why. Audited as "request.break_glass_reviewed"."""
    if not _approver_or_admin(actor):
        raise PermissionDenied("an approver or an administrator reviews a break-glass decision")
    if actor.pk in (request.break_glass_by_id, request.requester_id):
        raise PermissionDenied(
            "someone else reviews a break-glass decision: not the one who broke the glass, "
            "not the requester"
        )
    if request.break_glass_at is None:
        raise ValidationError(f"request {request.id} was not executed by break-glass")
    if not isinstance(agrees, bool):
        raise ValidationError("a review agrees or disagrees (true or false)")
    comment = (comment or "").strip()
    if not agrees and not comment:
        raise ValidationError("disagreeing says why: the comment is required")
    # A review is a second person's word, as an approval is: not a brand-new account's.
    approver_cooldown_check(actor)
    now = timezone.now()
    with transaction.atomic():
        won = R.objects.filter(
            id=request.id, break_glass_at__isnull=False, reviewed_at__isnull=True
        ).update(reviewed_by=actor, reviewed_at=now, review_agrees=agrees, review_comment=comment)
        if won != 1:
            raise ValidationError(f"request {request.id} was reviewed already")
        request.refresh_from_db()
        request_audit(
            request,
            "request.break_glass_reviewed",
            actor=actor,
            details={
                "agrees": agrees,
                "comment": comment,
                "break_glass_by": request.break_glass_by.get_username(),
                # Past its due time, or already alerted as overdue (by the scheduler's clock).
                "overdue": now > request.review_due_at
                or request.review_overdue_alerted_at is not None,
            },
        )
    return request
