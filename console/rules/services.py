"""Writes to standing rules: propose, approve or reject (four eyes, R17), withdraw, remove, and
stop (an auto-retry whose retry stopped on re-failures). Every change is claimed with a
conditional update, so two people acting at once cannot both win, and every change is in the
audit trail (target "rule")."""

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from console.access.rights import approver_cooldown_check
from console.audit.services import audit_record
from console.permissions import APPROVE_RULES, PROPOSE_RULES
from console.queues.models import Queue
from console.rules.models import REDIRECT, StandingRule
from console.rules.params import rule_fields, rule_parameters

R = StandingRule


def rule_audit(rule, action, *, actor, details=None):
    """A rule's entry in the audit trail: "rule.proposed", "rule.applied"..."""
    audit_record(
        actor=actor, action=action, target_type="rule", target_id=rule.id, details=details or {}
    )


def _described(rule):
    return {"name": rule.name, "kind": rule.kind, **rule_parameters(rule)}


def rule_propose(*, actor, name, kind, comment, params, from_file=False, recorded_by=None):
    """Propose a rule in `actor`'s name; it acts only once someone else approves it. The
    actor's own proposal of the same name still waiting is replaced (withdrawn) by this one.
    `recorded_by`: who the audit trail names when not `actor` (the server account that loaded a
    queue file)."""
    if not actor.has_perm(PROPOSE_RULES):
        raise PermissionDenied(f"{actor.get_username()} may not propose standing rules")
    fields = rule_fields(name=name, kind=kind, comment=comment, params=params)
    now = timezone.now()
    with transaction.atomic():
        waiting = R.objects.select_for_update().filter(name=name, status=R.PROPOSED).first()
        if waiting is not None and waiting.proposed_by_id != actor.pk:
            raise ValidationError(
                f"{waiting.said}, proposed by {waiting.proposed_by.get_username()}, waits for "
                "approval under this name already"
            )
        try:
            with transaction.atomic():
                if waiting is not None:
                    _end(waiting, R.WITHDRAWN, actor=actor, comment="replaced by a new proposal")
                rule = R.objects.create(
                    **fields,
                    from_file=from_file,
                    proposed_by=actor,
                    proposed_at=now,
                )
        except IntegrityError:
            raise ValidationError(f"a rule named {name!r} was just proposed: look again") from None
        if waiting is not None:
            rule_audit(
                waiting,
                "rule.withdrawn",
                actor=recorded_by or actor,
                details={"replaced_by": rule.id},
            )
        rule_audit(
            rule,
            "rule.proposed",
            actor=recorded_by or actor,
            details={**_described(rule), "comment": rule.comment, "from_file": from_file},
        )
    return rule


def _end(rule, status, *, actor, comment, now=None):
    """Move `rule` to a final `status`, if it still is what the caller read; ValidationError if
    someone else moved it first."""
    won = R.objects.filter(id=rule.id, status=rule.status).update(
        status=status,
        ended_by=actor,
        ended_at=now or timezone.now(),
        end_comment=comment or "",
    )
    if won != 1:
        raise ValidationError(f"{rule.said} is no longer {rule.status}")
    rule.refresh_from_db()
    return rule


def _check_decider(actor, rule):
    """Four eyes (R17), as a request's approval: the right to approve, someone other than the
    proposer, past the approver cool-down of a new or changed account (console.access)."""
    if not actor.has_perm(APPROVE_RULES):
        raise PermissionDenied("you may not approve or reject standing rules")
    if actor.pk == rule.proposed_by_id:
        raise PermissionDenied("four eyes: a standing rule is approved or rejected by someone else")
    approver_cooldown_check(actor)


def _still_holds(rule):
    """What held when the rule was proposed and must hold when it starts to act."""
    if rule.kind != REDIRECT:
        return
    if not Queue.objects.filter(name=rule.to_queue).exists():
        raise ValidationError(f"{rule.said} cannot be approved: there is no queue {rule.to_queue}")
    other = (
        R.objects.filter(kind=REDIRECT, status=R.ACTIVE, queue=rule.queue)
        .exclude(name=rule.name)
        .first()
    )
    if other is not None:
        raise ValidationError(
            f"{rule.said} cannot be approved: {other.said} redirects {rule.queue} already; "
            "remove it first"
        )


def rule_approve(*, actor, rule, comment=""):
    """A second person approves `rule`: it is active from now, and an active rule of the same
    name is removed, replaced by it, in the same transaction."""
    _check_decider(actor, rule)
    now = timezone.now()
    with transaction.atomic():
        _still_holds(rule)
        replaced = R.objects.select_for_update().filter(name=rule.name, status=R.ACTIVE).first()
        if replaced is not None:
            _end(replaced, R.REMOVED, actor=actor, comment=f"replaced by rule {rule.id}", now=now)
            rule_audit(replaced, "rule.removed", actor=actor, details={"replaced_by": rule.id})
        won = R.objects.filter(id=rule.id, status=R.PROPOSED).update(
            status=R.ACTIVE, decided_by=actor, decided_at=now, decision_comment=comment or ""
        )
        if won != 1:
            raise ValidationError(f"{rule.said} is no longer waiting for approval")
        rule_audit(
            rule,
            "rule.approved",
            actor=actor,
            details={
                **_described(rule),
                "comment": comment or "",
                "replaces": replaced.id if replaced else None,
            },
        )
    rule.refresh_from_db()
    return rule


def rule_reject(*, actor, rule, comment):
    if not comment or not comment.strip():
        raise ValidationError("a rejection says why: the comment is required")
    _check_decider(actor, rule)
    with transaction.atomic():
        won = R.objects.filter(id=rule.id, status=R.PROPOSED).update(
            status=R.REJECTED,
            decided_by=actor,
            decided_at=timezone.now(),
            decision_comment=comment.strip(),
        )
        if won != 1:
            raise ValidationError(f"{rule.said} is no longer waiting for approval")
        rule_audit(rule, "rule.rejected", actor=actor, details={"comment": comment.strip()})
    rule.refresh_from_db()
    return rule


def rule_withdraw(*, actor, rule, comment=""):
    """Its proposer takes a proposal back before anyone decided."""
    if actor.pk != rule.proposed_by_id:
        raise PermissionDenied("only the proposer withdraws a standing rule")
    if rule.status != R.PROPOSED:
        raise ValidationError(f"{rule.said} is {rule.status}: only a proposal is withdrawn")
    with transaction.atomic():
        _end(rule, R.WITHDRAWN, actor=actor, comment=comment)
        rule_audit(rule, "rule.withdrawn", actor=actor, details={"comment": comment or ""})
    return rule


def rule_remove(*, actor, rule, comment):
    """Remove an active rule, at once: it acts no more (one person may: it takes away what acts
    alone, as taking a right away does). Its requests already made go on as requests do."""
    if not actor.has_perm(PROPOSE_RULES):
        raise PermissionDenied("you may not remove standing rules")
    if not comment or not comment.strip():
        raise ValidationError("a removal says why: the comment is required")
    if rule.status != R.ACTIVE:
        raise ValidationError(f"{rule.said} is {rule.status}: only an active rule is removed")
    with transaction.atomic():
        _end(rule, R.REMOVED, actor=actor, comment=comment.strip())
        rule_audit(rule, "rule.removed", actor=actor, details={"comment": comment.strip()})
    return rule


def rule_stop(*, rule, reason, request=None):
    """Stop an active rule: an auto-retry whose `request` stopped (re-failures over its
    threshold, or a failure), since retrying again would fail again; or a rule whose authority
    lapsed. A person looks, and proposes it anew. Nothing for a rule no longer active."""
    rule.refresh_from_db(fields=["status"])
    if rule.status != R.ACTIVE:
        return rule
    with transaction.atomic():
        _end(rule, R.STOPPED, actor=None, comment=reason)
        rule_audit(
            rule,
            "rule.stopped",
            actor="system",
            details={"request": request.id if request else None, "reason": reason},
        )
    return rule


def rule_authority_lapsed(rule):
    """Why `rule` no longer stands on its approval, "" while it does: a rule acts on the rights
    of its proposer and its approver, and a right taken away, or an account deactivated, counts
    at once (R19)."""
    for user_id, right, role in (
        (rule.proposed_by_id, PROPOSE_RULES, "proposer"),
        (rule.decided_by_id, APPROVE_RULES, "approver"),
    ):
        if user_id is None:
            continue
        # Read again: rights are read at each use, never from an object kept since.
        user = get_user_model().objects.get(pk=user_id)
        if not user.is_active:
            return f"its {role}, {user.get_username()}, was deactivated"
        if not user.has_perm(right):
            return f"its {role}, {user.get_username()}, no longer holds the right to it"
    return ""


def rule_checked(*, rule, now, preview, error=""):
    """Record when `rule`'s application last looked, what it found (its page shows it), and why
    it made no request when it was refused one."""
    said = preview.as_dict() | ({"error": error} if error else {})
    R.objects.filter(id=rule.id).update(checked_at=now, last_check=said)
