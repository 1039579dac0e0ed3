"""Standing rules acting: each archive rule once a day (beat: RULES_ARCHIVE_SECONDS), each
auto-retry rule every RULES_RETRY_SECONDS. A rule acts through an action request of its own
(console.decisions.services.action_request_create_standing), approved by the rule's approval,
executed as any request is; the application is recorded with what the rule left alone and why,
in the audit trail ("rule.applied") and, through the request's events, in each message's history.

Tasks may be lost; work may not: a rule that was not looked at is looked at next time, and finds
what it missed (what it acted on is no longer quarantined, or an open request holds it). Two
workers looking at once: each first claims the rule with a conditional update of when it was
last looked at, and one of them wins."""

import logging

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from console.decisions.models import ActionRequest
from console.decisions.overlaps import OPEN
from console.decisions.scope import ScopeError, frozen_ids
from console.decisions.services import Action, action_request_create_standing
from console.decisions.standing import STANDING_RULE, Standing
from console.plurals import counted
from console.rules.candidates import rule_preview
from console.rules.models import (
    ARCHIVE,
    AUTO_RETRY,
    REDIRECT,
    RuleApplication,
    RuleRetry,
    StandingRule,
)
from console.rules.services import rule_audit, rule_authority_lapsed, rule_checked, rule_stop

R = StandingRule
log = logging.getLogger(__name__)


def _claimed(rule, now):
    """Take `rule` for one look at `now`: False when it is no longer active, or another worker
    took it between this one's read and its claim."""
    rule.refresh_from_db(fields=["status", "checked_at"])
    if rule.status != R.ACTIVE:
        return False
    won = R.objects.filter(id=rule.id, status=R.ACTIVE, checked_at=rule.checked_at).update(
        checked_at=now
    )
    return won == 1


def _comment(rule):
    """The request's comment: what its messages' history says of it."""
    if rule.kind == ARCHIVE:
        where = " and ".join(
            part
            for part in (
                f"group {rule.group}" if rule.group else "",
                f"exception {rule.exception_type}" if rule.exception_type else "",
            )
            if part
        )
        did = (
            f"quarantined in {rule.queue} ({where}) for {counted(rule.days, 'day')} or more, "
            "untouched"
        )
    else:
        did = (
            f"a new failure of group {rule.group}, reprocessed after {rule.delay_seconds} s, at "
            f"most {counted(rule.max_attempts, 'time')} a message"
        )
    return f"{rule.said}: {did}. Why: {rule.comment}"


def _standing(rule):
    approver = rule.decided_by.get_username()
    return Standing(
        rule_id=rule.id,
        requester=rule.proposed_by,
        approver=rule.decided_by,
        approval_reason=(
            f"Approved in advance: {rule.said}, proposed by {rule.proposed_by.get_username()} "
            f"and approved by {approver}, makes this request."
        ),
    )


def _retries_counted(rule, request, now):
    """One more retry of each message of the auto-retry's `request`."""
    for ids in frozen_ids(request.ids_path):
        known = set(
            RuleRetry.objects.filter(rule=rule, message_id__in=ids).values_list(
                "message_id", flat=True
            )
        )
        RuleRetry.objects.filter(rule=rule, message_id__in=known).update(
            attempts=F("attempts") + 1, last_at=now
        )
        RuleRetry.objects.bulk_create(
            RuleRetry(rule=rule, message_id=message_id, attempts=1, last_at=now)
            for message_id in ids
            if message_id not in known
        )


def _apply(rule, now):
    """Make the rule's request for what it matches at `now`, and record the application; None
    when it matches nothing (what it looked at is recorded on the rule)."""
    preview = rule_preview(rule=rule, now=now, limit=1)
    if not preview.count:
        rule_checked(rule=rule, now=now, preview=preview)
        return None
    action = Action(kind=ActionRequest.FAIL if rule.kind == ARCHIVE else ActionRequest.REPROCESS)
    options = {}
    if rule.kind == AUTO_RETRY and rule.steps:
        options = {"steps": rule.steps, "refailure_threshold": rule.refailure_threshold}
    with transaction.atomic():
        try:
            request = action_request_create_standing(
                standing=_standing(rule),
                scope={"kind": STANDING_RULE, "rule": rule.id, "at": now.isoformat()},
                action=action,
                comment=_comment(rule),
                **options,
            )
        except ScopeError:
            # Taken by someone between the look and the freeze: nothing left to act on.
            preview.count = 0
            rule_checked(rule=rule, now=now, preview=preview)
            return None
        except ValidationError as exc:
            # Refused as a person's request would be (a redirect's queue gone, say): said on
            # the rule's page, and looked at again next time.
            log.warning("%s made no request: %s", rule.said, "; ".join(exc.messages))
            preview.count = 0
            rule_checked(rule=rule, now=now, preview=preview, error="; ".join(exc.messages))
            return None
        # Whatever matched and was neither left alone for a reason the database tells nor frozen
        # is held by an open request.
        preview.count, preview.more, preview.sample = request.count, False, []
        told = preview.investigated + preview.touched + preview.exhausted
        preview.held = max(0, preview.matching - told - request.count)
        if rule.kind == AUTO_RETRY:
            _retries_counted(rule, request, now)
        application = RuleApplication.objects.create(
            rule=rule, request=request, at=now, count=request.count, left_alone=preview.left_alone()
        )
        rule_audit(
            rule,
            "rule.applied",
            actor="system",
            details={"request": request.id, "count": request.count, **preview.left_alone()},
        )
        rule_checked(rule=rule, now=now, preview=preview)
    return application


def _stands(rule):
    """Whether `rule` is active and stands on its approval; one whose authority lapsed (R19) is
    stopped here."""
    rule.refresh_from_db(fields=["status"])
    if rule.status != R.ACTIVE:
        return False
    reason = rule_authority_lapsed(rule)
    if reason:
        rule_stop(rule=rule, reason=reason)
    return not reason


def archive_apply(*, rule, now=None):
    """One archive rule, at `now`: FAIL what it matches (console.rules.candidates). Returns the
    RuleApplication, or None."""
    now = now or timezone.now()
    if not _stands(rule) or not _claimed(rule, now):
        return None
    return _apply(rule, now)


def auto_retry_apply(*, rule, now=None):
    """One auto-retry rule, at `now`: its group's new failures past the delay reprocessed, in its
    steps. One retry at a time: while its last request is open (its steps watched), nothing new;
    when that request stopped (re-failures over its threshold, or a failure), the rule stops too.
    Returns the RuleApplication, or None."""
    now = now or timezone.now()
    if not _stands(rule):
        return None
    last = (
        RuleApplication.objects.filter(rule=rule).select_related("request").order_by("-id").first()
    )
    if last is not None and last.request.status in OPEN:
        return None
    if last is not None and last.request.status == ActionRequest.FAILED:
        rule_stop(
            rule=rule,
            request=last.request,
            reason=f"its retry, request {last.request.id}, stopped: {last.request.error}",
        )
        return None
    if not _claimed(rule, now):
        return None
    return _apply(rule, now)


def redirect_look(*, rule, now=None):
    """A redirect acts when people reprocess (console.rules.redirects); its look only stops it
    once its authority lapsed. Returns None."""
    _stands(rule)


_APPLY = {ARCHIVE: archive_apply, AUTO_RETRY: auto_retry_apply, REDIRECT: redirect_look}


def rules_apply(*, kinds, now=None):
    """Every active rule of `kinds`, at `now`: {rule id: the request it made, or None}."""
    done = {}
    for rule in R.objects.filter(kind__in=kinds, status=R.ACTIVE).select_related(
        "proposed_by", "decided_by"
    ):
        application = _APPLY[rule.kind](rule=rule, now=now)
        done[rule.id] = application.request_id if application else None
    return done
