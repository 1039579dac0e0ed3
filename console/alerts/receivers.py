"""What raises alerts: entries of the audit trail (a queue disabled or enabled, a request's
steps), a broker source's consumer going down, a refresh finding new failure groups, a broken
audit chain. Each receiver runs inside its cause's transaction, so the alert is in the outbox
exactly when its cause is committed."""

import logging

from django.db import transaction
from django.dispatch import receiver
from django.urls import reverse

from console.alerts import events as E
from console.alerts.services import alert_raise
from console.alerts.tasks import alerts_send_enqueue
from console.audit.signals import recorded, verify_failed
from console.decisions.models import ActionRequest
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
        alert_raise_safely(
            kind=E.QUEUE_DISABLED,
            about=entry.target_id,
            title=f"Queue {entry.target_id} was disabled",
            text=f"The queue {entry.target_id} was disabled: {reason}",
            link=reverse("queue-list"),
            queue=entry.target_id,
            details={"reason": reason},
        )
    elif entry.action == "queue.enabled":
        alert_raise_safely(
            kind=E.QUEUE_ENABLED,
            about=entry.target_id,
            title=f"Queue {entry.target_id} was enabled again",
            text=f"{entry.actor} enabled the queue {entry.target_id} again.",
            link=reverse("queue-list"),
            queue=entry.target_id,
        )
    elif entry.target_type == "request":
        _request_step(entry)


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
    what = (
        f"request {request.id} ({A.LABELS[request.action].lower()} of {request.count:,} messages)"
    )
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
