"""The decision screens' actions on one request: approve, reject, withdraw, cancel, and R17's
break-glass and its review. Each posts a small form, lets a service decide, and says on the
request's page what happened or why not; the services check who may (a requester cannot approve
their own request however the form is posted)."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from console.decisions.answers import request_or_404, why
from console.decisions.break_glass import break_glass_execute, break_glass_review
from console.decisions.forms import COMMENT_MAX
from console.decisions.models import ActionRequest as R
from console.decisions.services import (
    action_request_approve,
    action_request_cancel,
    action_request_reject,
    action_request_withdraw,
)
from console.forms import LimitedForm
from console.permissions import APPROVE_REQUESTS, VIEW_REQUESTS, perms_required


def _decide(request, request_id, form_class, decide, said):
    """Post `form_class`, let `decide(r, data)` act on the request, and tell on its page what
    happened (`said(r, data)`) or why not. PermissionDenied goes up: Django answers 403."""
    r = request_or_404(request_id)
    form = form_class(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(m for errors in form.errors.values() for m in errors))
        return redirect("request-detail", r.id)
    try:
        r = decide(r, form.cleaned_data)
    except ValidationError as exc:
        messages.error(request, why(exc))
    else:
        messages.success(request, said(r, form.cleaned_data))
    return redirect("request-detail", r.id)


class _CommentForm(LimitedForm):
    comment = forms.CharField(required=False, max_length=COMMENT_MAX, strip=False)


def _act(request, request_id, service, said):
    """A decision with a comment, by `service`."""

    def decide(r, data):
        return service(actor=request.user, request=r, comment=data["comment"])

    return _decide(request, request_id, _CommentForm, decide, said)


def _said(what):
    return lambda r, data: f"Request {r.id} {what}."


def _cancelled(r, data):
    if r.status == R.CANCELLED:
        return f"Request {r.id} is cancelled."
    return f"Request {r.id} stops before its next chunk; the chunks done stay done."


def _approved_by(r, user):
    """True when `user` approved `r` already (it may have run since)."""
    return r.decided_by_id == user.pk and r.status not in (R.PENDING, R.REJECTED)


@require_POST
@login_required
@perms_required(VIEW_REQUESTS, APPROVE_REQUESTS)
def request_approve(request, request_id):
    """Approve, once: the same approver's second post (a double-click, a reload that posts
    again) is no second decision and no error: the page says it is approved, once."""
    r = request_or_404(request_id)
    if not _approved_by(r, request.user):
        response = _act(request, request_id, action_request_approve, _said("is approved"))
        r.refresh_from_db()
        if not _approved_by(r, request.user):
            return response
        # Approved by this approver, by this post or by one that won the race with it: the
        # page says so once, whichever post it answers.
        _said_once(request, f"Request {r.id} is approved.")
        return response
    _said_once(request, f"Request {r.id} is approved.")
    return redirect("request-detail", r.id)


def _said_once(request, said):
    """`said` as the page's one message about it: the errors of a post that lost the race to
    approve ("no longer waiting") and a repeat of the same words are dropped."""
    storage = messages.get_messages(request)
    kept = [m for m in storage if str(m) != said and "no longer waiting" not in str(m)]
    storage.used = True  # emptied: what is kept is added again below, once
    for message in kept:
        messages.add_message(request, message.level, message.message, extra_tags=message.extra_tags)
    messages.success(request, said)


@require_POST
@login_required
@perms_required(VIEW_REQUESTS, APPROVE_REQUESTS)
def request_reject(request, request_id):
    return _act(request, request_id, action_request_reject, _said("is rejected"))


@require_POST
@login_required
@perms_required(VIEW_REQUESTS)
def request_withdraw(request, request_id):
    return _act(request, request_id, action_request_withdraw, _said("is withdrawn"))


@require_POST
@login_required
@perms_required(VIEW_REQUESTS)
def request_cancel(request, request_id):
    return _act(request, request_id, action_request_cancel, _cancelled)


class _BreakGlassForm(LimitedForm):
    # Not required here: the service says what is missing, in its words.
    reason = forms.CharField(required=False, max_length=COMMENT_MAX, strip=False)
    confirm = forms.BooleanField(required=False)


@require_POST
@login_required
@perms_required(VIEW_REQUESTS)  # and an approver or an administrator: the service checks
def request_break_glass(request, request_id):
    """Execute a pending request alone (R17's break-glass), with a reason and the confirmation
    of what happens. Off unless BREAK_GLASS is on: the service refuses it then (403)."""

    def execute(r, data):
        return break_glass_execute(
            actor=request.user, request=r, reason=data["reason"], confirm=data["confirm"]
        )

    def said(r, data):
        return (
            f"Request {r.id} is approved by you alone (break-glass) and starts now. Every other "
            "approver and administrator is told; someone else must review it."
        )

    return _decide(request, request_id, _BreakGlassForm, execute, said)


class _ReviewForm(LimitedForm):
    verdict = forms.ChoiceField(
        choices=[("agree", "I agree"), ("disagree", "I disagree")],
        error_messages={"required": "choose whether you agree or disagree"},
    )
    comment = forms.CharField(required=False, max_length=COMMENT_MAX, strip=False)


@require_POST
@login_required
@perms_required(VIEW_REQUESTS)
def request_review(request, request_id):
    """Someone else's review of a break-glass decision: agree, or disagree and say why. Approvers
    and administrators review; the service checks who (never the one who broke the glass, nor
    the requester)."""

    def review(r, data):
        agrees = data["verdict"] == "agree"
        return break_glass_review(
            actor=request.user, request=r, agrees=agrees, comment=data["comment"]
        )

    def said(r, data):
        verb = "agree with" if data["verdict"] == "agree" else "disagree with"
        return f"You {verb} request {r.id}'s break-glass decision; recorded."

    return _decide(request, request_id, _ReviewForm, review, said)
