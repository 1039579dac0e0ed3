"""What raises alerts: entries of the audit trail (a queue disabled or enabled, a request's
steps, a break-glass decision, its review and its review overdue, a role grant waiting), a
broker source's consumer going down, a refresh finding new failure groups, a broken audit chain.
Each receiver runs inside its cause's transaction, so the alert is in the outbox exactly when its
cause is committed."""

import logging

from django.db import transaction
from django.dispatch import receiver
from django.urls import reverse

from console.access.models import RoleGrant
from console.alerts import events as E
from console.alerts.services import alert_raise
from console.alerts.tasks import alerts_send_enqueue
from console.audit.signals import recorded, verify_failed
from console.decisions.models import ActionRequest
from console.notes.lifecycle import REFRESH, muted_fingerprints
from console.plurals import counted
from console.queues.signals import source_state_changed
from console.readmodels.models import FailureGroup
from console.readmodels.signals import counts_drifted, groups_appeared
from workers.engine import actions as A

# Audit actions that end a request's execution, and what each says of it.
_FINISHED = {
    "execution.finished": "finished",
    "execution.failed": "failed",
    "execution.cancelled": "was cancelled",
    "request.expired": "expired before it ran",
}
# A progressive redrive's step (or its canary) re-failed over its threshold: the rest is left.
_STOPPED = ("execution.step_failed",)
# Break-glass (R17): a request executed by one person alone, and its review overdue.
_BREAK_GLASS = ("request.break_glass", "request.break_glass_review_overdue")
log = logging.getLogger(__name__)
# A refresh that finds more new groups than this raises one alert for the rest.
NEW_GROUPS_ONE_BY_ONE = 20


def alert_raise_safely(**kwargs):
    """alert_raise() in a savepoint: an alert that cannot be written (a bug, not a cause) is
    logged, and its cause's transaction commits. What it leaves to send is handed to the default
    worker once the cause is committed (beat's next tick would find it too)."""
    try:
        with transaction.atomic():
            alert = alert_raise(**kwargs)
    except Exception:
        log.exception("the alert %s about %s could not be raised", kwargs["kind"], kwargs["about"])
        return None
    if alert is not None and alert.pending:
        transaction.on_commit(alerts_send_enqueue, robust=True)
    return alert


@receiver(recorded, dispatch_uid="alerts.from_audit")
def _from_audit(sender, entry, **kwargs):
    if entry.action == "queue.disabled":
        reason = entry.details.get("reason", "")
        _queue_switched(
            entry,
            E.QUEUE_DISABLED,
            title=f"Queue {entry.target_id} was disabled",
            text=f"The queue {entry.target_id} was disabled: {reason}",
            details={"reason": reason},
        )
    elif entry.action == "queue.enabled":
        _queue_switched(
            entry,
            E.QUEUE_ENABLED,
            title=f"Queue {entry.target_id} was enabled again",
            text=f"{entry.actor} enabled the queue {entry.target_id} again.",
        )
    elif entry.action in _BREAK_GLASS:
        _break_glass(entry)
    elif entry.action == "request.break_glass_reviewed":
        _break_glass_reviewed(entry)
    elif entry.target_type == "request":
        _request_step(entry)
    elif entry.action == "role_grant.requested":
        _role_grant_waiting(entry)
    elif entry.action == "group.reopened" and entry.actor == REFRESH:
        _group_reopened(entry)


def _queue_switched(entry, kind, **said):
    """A queue was disabled or enabled again (the audit entry is about it): an alert about the
    queue, linked to the queues page."""
    alert_raise_safely(
        kind=kind, about=entry.target_id, link=reverse("queue-list"), queue=entry.target_id, **said
    )


def _group_reopened(entry):
    """A resolved group failed again (console.notes.lifecycle): its fix did not hold."""
    group = FailureGroup.objects.filter(fingerprint=entry.target_id).first()
    if group is None:
        return
    alert_raise_safely(
        kind=E.GROUP_REOPENED,
        about=group.fingerprint,
        title=f"A resolved failure group in {group.queue} failed again: "
        f"{group.exception_type or 'failure'}",
        text=f"It failed again after it was resolved: {group.exception_type}: "
        f"{group.pattern}".rstrip(": "),
        link=reverse("group-detail", args=[group.fingerprint]),
        queue=group.queue,
        details={"fingerprint": group.fingerprint, "count": group.count},
    )


def _role_grant_waiting(entry):
    """A role grant waits for a second administrator: every other administrator is told, as
    approvers are of a request waiting. Not the one who asked, nor the one who would receive
    it: neither may confirm it."""
    grant = (
        RoleGrant.objects.select_related("user", "role", "queue", "requested_by")
        .filter(id=entry.target_id)
        .first()
    )
    if grant is None or grant.status != RoleGrant.PENDING:
        return
    asker, grantee = grant.asked_by, grant.user.get_username()
    alert_raise_safely(
        kind=E.ROLE_GRANT_WAITING,
        about=f"role-grant-{grant.id}",
        title=f"{asker} asks you to confirm {grant.what} for {grantee}",
        text=f"{asker} asks: {grant.comment}"
        if grant.comment
        else f"{asker} asks a second administrator to confirm it.",
        link=reverse("role-grant-detail", args=[grant.id]),
        once=True,
        exclude=[u for u in (grant.requested_by, grant.user) if u is not None],
        details={
            "grant": grant.id,
            "user": grantee,
            "role": grant.role.name if grant.role_id is not None else None,
            "queue": grant.queue.name if grant.queue_id is not None else None,
            "requested_by": asker,
        },
    )


def _what(request):
    return (
        f"request {request.id} ({A.LABELS[request.action].lower()} of "
        f"{counted(request.count, 'message')})"
    )


def _request_step(entry):
    action = entry.action
    if action not in (
        "request.created",
        "request.approved",
        "request.rejected",
        *_FINISHED,
        *_STOPPED,
    ):
        return
    request = ActionRequest.objects.select_related("requester").filter(id=entry.target_id).first()
    if request is None:
        return
    what = _what(request)
    link = reverse("request-detail", args=[request.id])
    common = {
        "about": f"request-{request.id}",
        "link": link,
        "once": True,
        "details": {"request": request.id, "action": request.action, "count": request.count},
    }
    if action == "request.created":
        if request.status != ActionRequest.PENDING:
            return
        alert_raise_safely(
            kind=E.REQUEST_WAITING,
            title=f"{request.requester.get_username()} asks for your approval of {what}",
            text=f"{request.requester.get_username()} asks: {request.comment}",
            exclude=[request.requester],
            **common,
        )
    elif action in ("request.approved", "request.rejected"):
        approved = action == "request.approved"
        comment = entry.details.get("comment", "")
        alert_raise_safely(
            kind=E.REQUEST_APPROVED if approved else E.REQUEST_REJECTED,
            title=f"Your {what} was {'approved' if approved else 'rejected'}",
            text=f"{entry.actor} {'approved' if approved else 'rejected'} it"
            + (f": {comment}" if comment else "."),
            to=[request.requester],
            **common,
        )
    elif action in _FINISHED:
        done = entry.details
        text = f"It {_FINISHED[action]}."
        if "done" in done:
            text += (
                f" Decided {done.get('done', 0):,}, skipped {done.get('skipped', 0):,}, "
                f"could not decide {done.get('failed', 0):,}."
            )
        if done.get("error"):
            text += f" {done['error']}"
        alert_raise_safely(
            kind=E.REQUEST_FINISHED,
            title=f"Your {what} {_FINISHED[action]}",
            text=text,
            to=[request.requester],
            **common,
        )
    else:
        result = entry.details.get("result", "")
        alert_raise_safely(
            kind=E.REQUEST_STOPPED,
            title=f"Your {what} was stopped",
            text=f"Stopped, and the rest of the set was not touched: {result}",
            to=[request.requester],
            **common,
        )


def _break_glass(entry):
    """Someone broke the glass: every approver and administrator hears of it at once, but the
    one who broke it, and a requester who is someone else hears of it as of an approval. Its
    review overdue: they hear again, but the two who may not review it."""
    request = (
        ActionRequest.objects.select_related("requester", "break_glass_by")
        .filter(id=entry.target_id)
        .first()
    )
    if request is None or request.break_glass_by is None:
        return
    breaker = request.break_glass_by.get_username()
    what = _what(request)
    due = f"{request.review_due_at:%Y-%m-%d %H:%M} UTC"
    common = {
        "about": f"request-{request.id}",
        "link": reverse("request-detail", args=[request.id]),
        "once": True,
        "details": {
            "request": request.id,
            "action": request.action,
            "count": request.count,
            "break_glass_by": breaker,
            "reason": request.break_glass_reason,
            "review_due_at": request.review_due_at.isoformat(),
        },
    }
    if entry.action == "request.break_glass":
        alert_raise_safely(
            kind=E.REQUEST_BREAK_GLASS,
            title=f"{breaker} broke the glass: {what} executed without a second person",
            text=f"Someone else must review it by {due}. {breaker}'s reason: "
            f"{request.break_glass_reason}",
            exclude=[request.break_glass_by],
            **common,
        )
        if request.requester_id != request.break_glass_by_id:
            alert_raise_safely(
                kind=E.REQUEST_APPROVED,
                title=f"Your {what} was executed by {breaker} alone (break-glass)",
                text=f"{breaker}'s reason: {request.break_glass_reason}",
                to=[request.requester],
                **common,
            )
    else:
        alert_raise_safely(
            kind=E.REQUEST_REVIEW_OVERDUE,
            title=f"The review of {what}, executed by {breaker} alone, is overdue",
            text=f"It was due by {due}. {breaker}'s reason: {request.break_glass_reason}",
            exclude=[request.break_glass_by, request.requester],
            **common,
        )


def _break_glass_reviewed(entry):
    """A break-glass decision reviewed: it closes the incident its break-glass opened on a pager
    (events.INCIDENT). People hear of it if they choose to: no role's default."""
    request = (
        ActionRequest.objects.select_related("break_glass_by").filter(id=entry.target_id).first()
    )
    if request is None or request.break_glass_by is None:
        return
    breaker = request.break_glass_by.get_username()
    agrees = entry.details.get("agrees") is True
    comment = entry.details.get("comment", "")
    alert_raise_safely(
        kind=E.REQUEST_BREAK_GLASS_REVIEWED,
        about=f"request-{request.id}",
        title=f"{entry.actor} reviewed {_what(request)}, executed by {breaker} alone: "
        + ("agrees" if agrees else "disagrees"),
        text=f"{entry.actor}: {comment}" if comment else f"{entry.actor} agrees.",
        link=reverse("request-detail", args=[request.id]),
        once=True,
        details={
            "request": request.id,
            "action": request.action,
            "count": request.count,
            "break_glass_by": breaker,
            "reviewed_by": entry.actor,
            "agrees": agrees,
            "comment": comment,
        },
    )


@receiver(source_state_changed, dispatch_uid="alerts.source_down")
def _source_down(sender, name, state, error="", **kwargs):
    if state != "down":
        return
    alert_raise_safely(
        kind=E.SOURCE_DOWN,
        about=name,
        title=f"Broker source {name} is down",
        text=f"The consumer of {name} cannot reach its broker: {error or 'no reason given'}",
        link=reverse("queue-list"),
        details={"source": name, "error": error},
    )


@receiver(groups_appeared, dispatch_uid="alerts.groups_new")
def _groups_new(sender, fingerprints, **kwargs):
    # A group people muted that emptied and now fills again stays muted: no alert.
    muted = set(
        muted_fingerprints()
        .filter(fingerprint__in=fingerprints)
        .values_list("fingerprint", flat=True)
    )
    fingerprints = [f for f in fingerprints if f not in muted]
    shown = fingerprints[:NEW_GROUPS_ONE_BY_ONE]
    for group in FailureGroup.objects.filter(fingerprint__in=shown):
        alert_raise_safely(
            kind=E.GROUP_NEW,
            about=group.fingerprint,
            title=f"New failure group in {group.queue}: {group.exception_type or 'failure'}",
            text=f"{group.exception_type}: {group.pattern}".strip(": "),
            link=reverse("group-detail", args=[group.fingerprint]),
            queue=group.queue,
            details={"fingerprint": group.fingerprint, "count": group.count},
        )
    rest = len(fingerprints) - len(shown)
    if rest > 0:
        alert_raise_safely(
            kind=E.GROUP_NEW,
            about="many",
            title=f"{rest:,} more new failure groups",
            text=f"A refresh found {len(fingerprints):,} new failure groups; see the groups page.",
            link=reverse("group-list"),
            details={"count": len(fingerprints)},
        )


@receiver(verify_failed, dispatch_uid="alerts.audit_broken")
def _audit_broken(sender, result, **kwargs):
    alert_raise_safely(
        kind=E.AUDIT_BROKEN,
        about="chain",
        title="The audit trail is not intact",
        text=(
            f"A walk of the audit chain found {len(result.problems)} problem(s) in "
            f"{result.entries:,} entries; the first: {result.problems[0]}"
        ),
        link=reverse("audit-list"),
        details={"problems": result.problems[:20], "entries": result.entries},
    )


@receiver(counts_drifted, dispatch_uid="alerts.counts_drift")
def _counts_drift(sender, about, text, details, **kwargs):
    alert_raise_safely(
        kind=E.COUNTS_DRIFT,
        about=about,
        title="The console's counts differ from the lake",
        text=text,
        link=reverse("dashboard"),
        details=details,
    )
