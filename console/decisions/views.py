"""The decision screens: ask for an action on a scope, the list of requests, one request (its
frozen set as the approver approves it, the approval, the execution's progress, its audit
entries) and the error notifications sent to senders.

Every view checks its permission on the server, and the services check theirs again (a
requester cannot approve their own request however the form is posted). Comments, reasons, ids
and bodies are attacker-controlled: they reach the templates as plain strings, escaped there."""

import json
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.access.rights import approver_cooldown_ends
from console.browse.body import body_render
from console.browse.services import message_body_read_record
from console.decisions import selectors
from console.decisions.answers import frozen_ids_response, request_or_404, why
from console.decisions.approval import approval_budget, approval_policy
from console.decisions.break_glass import (
    break_glass_consequence,
    may_break_glass,
    may_break_glass_role,
    may_review,
)
from console.decisions.editing import (
    BULK_EDIT_SCOPES,
    editable_body,
    editable_headers,
    patch_initial,
    preview_read,
)
from console.decisions.forms import (
    NOTIFICATIONS_PAGE,
    REQUESTS_PAGE,
    TEXT_MAX,
    ActionRequestForm,
    NotificationFilterForm,
    QuickActionForm,
    RequestFilterForm,
    normalize_edited_body,
    scope_from_params,
    scope_params,
)
from console.decisions.models import ActionRequest as R
from console.decisions.outcome import (
    LABELS,
    OutcomeUnknown,
    outcome_available,
    outcome_page,
    request_outcome,
)
from console.decisions.overlaps import request_overlaps
from console.decisions.patch_preview import (
    patch_preview,
    preview_failing,
    preview_refusal,
    scope_preview_ids,
)
from console.decisions.scope import ScopeError
from console.decisions.scope_overlaps import scope_overlaps
from console.decisions.selections import selection_create, selection_ids, selection_ids_parse
from console.decisions.services import (
    Action,
    action_request_create,
    action_request_edited_body_read,
)
from console.decisions.standing import notes_for, redirects_said
from console.decisions.targets import redrive_target_said
from console.list_pages import filtered_list
from console.permissions import (
    APPROVE_REQUESTS,
    MAKE_REQUESTS,
    VIEW_BODY,
    VIEW_MESSAGES,
    VIEW_REQUESTS,
    perms_required,
)
from console.plurals import counted
from console.readmodels.models import MessageIndex
from workers.jobs.decisions.body_edits import patch_sha256

BREAKDOWN_SHOWN = 200
SELECTION_SHOWN = 100


# --- Asking -------------------------------------------------------------------------------------


def _to_created(request, created):
    """To the new request's page, saying whether it waits for a second person."""
    if created.status == R.PENDING:
        messages.success(request, f"Request {created.id} waits for a second person.")
    else:
        messages.success(request, f"Request {created.id} is approved and starts now.")
    return redirect("request-detail", created.id)


# One click on a failure group or on the message list's filter: the action, and what its button
# says (the full form keeps the other queue, the edited body, the rate and the canary).
QUICK_ACTIONS = {R.REPROCESS: "Retry", R.FAIL: "Fail", R.END: "End with error"}
QUICK_SCOPES = ("group", "filter", "selection")


def _scope_from(request):
    """The scope a request screen's URL names. A selection comes as the key of one the message
    list posted (selection_post), or, for a handful of ids, as the ids themselves."""
    params = request.GET
    if params.get("scope") == "selection" and params.get("selection"):
        params = params.copy()
        params.setlist("ids", selection_ids(key=params["selection"], owner=request.user))
    return scope_from_params(params)


def _scope_query(request, scope):
    """The GET parameters that name the scope of this screen again, for its links."""
    if scope["kind"] == "selection" and request.GET.get("selection"):
        return [("scope", "selection"), ("selection", request.GET["selection"])]
    return scope_params(scope)


# Where the message list's selection bar sends a posted selection: the full form (with its bulk
# edit in view: "edit"), or one click.
SELECTION_THEN = ("new", "edit", *QUICK_ACTIONS)


@require_POST
@login_required
@perms_required(MAKE_REQUESTS, VIEW_MESSAGES)
def selection_post(request):
    """The message list's selection (its ticked ids, across pages: up to MAX_SELECTION, as lines
    of one field or as separate fields), kept under a key; then to the screen that acts on it."""
    then = request.POST.get("then") or "new"
    try:
        if then not in SELECTION_THEN:
            raise ScopeError(f"then is one of {', '.join(SELECTION_THEN)}")
        ids = selection_ids_parse(request.POST.getlist("ids"), text_max=TEXT_MAX)
    except ScopeError as exc:
        return render(request, "decisions/request_new.html", {"scope_error": str(exc)}, status=400)
    kept = selection_create(owner=request.user, ids=ids)
    query = [("scope", "selection"), ("selection", str(kept.key))]
    if then == "new":
        return redirect(reverse("request-new") + "?" + urlencode(query))
    if then == "edit":
        return redirect(reverse("request-new") + "?" + urlencode(query) + "#bulk-edit")
    return redirect(reverse("request-quick") + "?" + urlencode([*query, ("action", then)]))


@require_http_methods(["GET", "POST"])
@login_required
@perms_required(MAKE_REQUESTS, VIEW_MESSAGES)
def request_new(request):
    """GET: what the scope matches now and the form; POST: freeze it into a request."""
    template = "decisions/request_new.html"
    try:
        scope = _scope_from(request)
        matching = selectors.scope_match_count(scope=scope)
    except ScopeError as exc:
        return render(request, template, {"scope_error": str(exc)}, status=400)
    ctx = {
        "scope": scope,
        "matching": matching,
        "scope_group": selectors.scope_group(scope=scope),
        "budget": approval_budget(request.user),
    }
    original, content_type, headers = None, "", None
    with_body = scope["kind"] == "message"
    if with_body:
        ctx["message"] = message = MessageIndex.objects.filter(message_id=scope["id"]).first()
        original, ctx["body_note"], content_type = editable_body(request.user, scope["id"])
        headers, ctx["headers_kept"] = editable_headers(
            scope["id"], message.queue if message else ""
        )
        # A POST reads it only to compare with what came back; showing it is what is recorded.
        if original is not None and request.method == "GET":
            message_body_read_record(actor=request.user, message_id=scope["id"], via="request form")
    if scope["kind"] == "selection":
        ctx["selection"] = scope["ids"][:SELECTION_SHOWN]
        ctx["more_selected"] = max(0, len(scope["ids"]) - SELECTION_SHOWN)
    sources = selectors.scope_redrive_sources(scope=scope)
    ctx["redrive_sources"] = sources
    # What other open requests hold of these messages, told before sending, not only after.
    ctx["overlaps"] = scope_overlaps(scope=scope, matching=matching)
    # Where a standing redirect (console.rules) sends a reprocess of these, told before sending.
    ctx["standing"] = redirects_said(queues=_queue_names(scope, matching))
    ctx["scope_query"] = urlencode(_scope_query(request, scope))
    initial = {
        "action": request.GET.get("action") or R.REPROCESS,
        "edited_body": original,
        "edited_headers": headers,
        "patch": patch_initial(request.GET),
        "target_queue": request.GET.get("target_queue", ""),
    }
    posted = request.method == "POST"
    form = ActionRequestForm(
        request.POST if posted else None,
        initial=initial,
        with_body=with_body,
        with_patch=scope["kind"] in BULK_EDIT_SCOPES,
        redrive_sources=sources,
        original_body=original,
        original_headers=headers,
        content_type=content_type,
        previewing=posted and "preview" in request.POST,
    )
    if posted and form.is_valid() and _bulk_edit_previewed(request, form, scope, ctx):
        data = form.cleaned_data
        action = Action(
            kind=data["action"],
            target_queue=data["target_queue"],
            redrive_target=form.redrive_target(),
            edited_body=normalize_edited_body(data.get("edited_body", ""), original),
            edited_headers=data.get("edited_headers"),
            patch=data.get("patch"),
            error_code=data["error_code"],
            error_description=data["error_description"],
        )
        try:
            created = action_request_create(
                actor=request.user,
                scope=scope,
                action=action,
                comment=data["comment"],
                rate_limit=data["rate_limit"],
                canary=data["canary"] or 0,
                **form.execution_options(),
            )
        except (ValidationError, ScopeError) as exc:
            form.add_error(None, why(exc))
        else:
            return _to_created(request, created)
    ctx["form"] = form
    previewing = "preview" in ctx and form.is_valid()
    return render(request, template, ctx, status=400 if posted and not previewing else 200)


def _bulk_edit_previewed(request, form, scope, ctx):
    """Whether a request with a bulk edit may be made now: its patch's preview was shown (the
    page carries its fingerprint), and none of its sampled results is refused. Otherwise the
    page shows the preview (`ctx["preview"]`), with what refuses it, and the person sends the
    request from there. True without a bulk edit."""
    patch = form.cleaned_data.get("patch")
    if patch is None or form.cleaned_data.get("action") != R.REPROCESS:
        return True
    rows = patch_preview(message_ids=scope_preview_ids(scope), patch=patch)
    fingerprint = patch_sha256(patch)
    ctx["preview"] = rows
    ctx["preview_failing"] = preview_failing(rows)
    ctx["preview_diffs"] = preview_read(user=request.user, rows=rows)
    refused = preview_refusal(rows)
    if refused:
        form.add_error("patch", refused)
        return False
    if "preview" not in request.POST and form.cleaned_data.get("previewed") == fingerprint:
        return True
    # The page sends it again with this fingerprint: the preview the person has now seen.
    form.data = form.data.copy()
    form.data["previewed"] = fingerprint
    return False


def _queue_names(scope, matching):
    """The queues of the messages a scope matches now (when its count is known)."""
    return [queue for queue, _ in selectors.scope_queues(scope=scope, matching=matching) or ()]


def _scope_said(scope, group):
    """The scope in a sentence, for a request's comment when nobody wrote one."""
    if scope["kind"] == "group":
        pattern = group.pattern if group is not None else scope["group"]
        return f"failure group '{pattern[:200]}'"
    if scope["kind"] == "selection":
        return f"{counted(len(scope['ids']), 'selected message')}"
    said = ", ".join(f"{name} = {value}" for name, value in scope["filters"].items())
    return f"the messages of the filter {said}" if said else "every quarantined message"


@require_http_methods(["GET", "POST"])
@login_required
@perms_required(MAKE_REQUESTS, VIEW_MESSAGES)
def request_quick(request):
    """GET: the short confirmation of a one-click action (how many, in which queues, whether a
    second person must approve); POST: the request, as the full form would send it."""
    template = "decisions/request_quick.html"
    action = request.GET.get("action", "")
    try:
        if action not in QUICK_ACTIONS:
            raise ScopeError(f"the action is one of {', '.join(QUICK_ACTIONS)}")
        scope = _scope_from(request)
        if scope["kind"] not in QUICK_SCOPES:
            raise ScopeError("one click acts on a failure group, a selection or a filter")
        matching = selectors.scope_match_count(scope=scope)
    except ScopeError as exc:
        return render(request, template, {"scope_error": str(exc)}, status=400)
    group = selectors.scope_group(scope=scope)
    posted = request.method == "POST"
    form = QuickActionForm(request.POST if posted else None, ends=action == R.END)
    if posted and form.is_valid():
        data = form.cleaned_data
        label = QUICK_ACTIONS[action]
        comment = data["comment"].strip() or f"{label}: {_scope_said(scope, group)} (one click)"
        try:
            created = action_request_create(
                actor=request.user,
                scope=scope,
                action=Action(
                    kind=action,
                    error_code=data.get("error_code", ""),
                    error_description=data.get("error_description", ""),
                ),
                comment=comment,
            )
        except (ValidationError, ScopeError) as exc:
            form.add_error(None, why(exc))
        else:
            return _to_created(request, created)
    ctx = {
        "scope": scope,
        "scope_group": group,
        "action": action,
        "label": QUICK_ACTIONS[action],
        "matching": matching,
        "queues": selectors.scope_queues(scope=scope, matching=matching),
        "overlaps": scope_overlaps(scope=scope, matching=matching),
        "standing": (
            redirects_said(queues=_queue_names(scope, matching)) if action == R.REPROCESS else []
        ),
        "approval": approval_policy(
            actor=request.user,
            action=Action(kind=action),
            count=matching.count,
            more=matching.more,
        ),
        "full_form": reverse("request-new")
        + "?"
        + urlencode([*_scope_query(request, scope), ("action", action)]),
        "form": form,
    }
    return render(request, template, ctx, status=400 if posted else 200)


# --- Reading ------------------------------------------------------------------------------------


@require_GET
@login_required
@perms_required(VIEW_REQUESTS)
def request_list(request):
    return filtered_list(
        request,
        RequestFilterForm,
        "decisions/request_list.html",
        lambda data: selectors.request_list(
            user=request.user,
            status=data["status"],
            show=data["show"],
            before=data["before"],
            limit=REQUESTS_PAGE,
        ),
        kept=("status", "show"),
        # Where break-glass is found: a pending row's link to its form, for whoever may use it.
        may_break_glass=may_break_glass(request.user) and not _cooling(request.user),
    )


def _cooling(user):
    """Whether `user` is an approver still in their cool-down (console.access): not yet one who
    approves, nor breaks the glass."""
    return approver_cooldown_ends(user) is not None


def _by_count(counts):
    """[(name, n)], largest first, at most BREAKDOWN_SHOWN, and how many more there are."""
    items = sorted((counts or {}).items(), key=lambda kv: (-kv[1], kv[0]))
    return items[:BREAKDOWN_SHOWN], max(0, len(items) - BREAKDOWN_SHOWN)


@require_GET
@login_required
@perms_required(VIEW_REQUESTS)
def request_detail(request, request_id):
    r = request_or_404(request_id)
    user = request.user
    is_requester = user.pk == r.requester_id
    may_approve = user.has_perm(APPROVE_REQUESTS)
    queues, more_queues = _by_count(r.breakdown.get("queues"))
    groups, more_groups = _by_count(r.breakdown.get("groups"))
    patterns = selectors.group_patterns(fingerprints=[name for name, _ in groups if name])
    groups = [(name, n, patterns.get(name)) for name, n in groups]
    edited = None
    if r.edited_body is not None and user.has_perm(VIEW_BODY):
        edited = body_render(action_request_edited_body_read(actor=user, request=r, via="request"))
    preview = r.patch_preview or []
    ids = r.scope.get("ids") if isinstance(r.scope.get("ids"), list) else []
    # An account in its approver cool-down sees when it may approve, not a button that refuses.
    approve_from = approver_cooldown_ends(user) if may_approve else None
    cooling = approve_from is not None
    ctx = {
        "r": r,
        "scope_group": selectors.scope_group(scope=r.scope),
        "approve_from": approve_from,
        "queues": queues,
        "more_queues": more_queues,
        "groups": groups,
        "more_groups": more_groups,
        "selection": ids[:SELECTION_SHOWN],
        "more_selected": max(0, len(ids) - SELECTION_SHOWN),
        "edited": edited,
        "edited_size": len(r.edited_body) if r.edited_body is not None else None,
        # An edit's headers are message data: shown to those who may read messages.
        "header_changes": r.header_changes if user.has_perm(VIEW_MESSAGES) else None,
        "patch_said": json.dumps(json.loads(r.patch), indent=2, ensure_ascii=False)
        if r.patch is not None
        else None,
        "preview": preview,
        "preview_failing": preview_failing(preview),
        "preview_diffs": preview_read(user=user, rows=preview, request=r),
        "edit_failures": selectors.request_edit_failures(request_id=r.id),
        # Inert text (autoescaped): the target is what the requester typed.
        "redrive_target_said": redrive_target_said(r.redrive_target),
        "is_requester": is_requester,
        "pending": r.status == R.PENDING,
        "may_decide": may_approve and not cooling and not is_requester and r.status == R.PENDING,
        "may_withdraw": is_requester and r.status in (R.PENDING, R.APPROVED),
        "may_cancel": (is_requester or may_approve) and r.status in selectors.ACTIVE,
        "active": r.status in selectors.ACTIVE,
        "active_statuses": " ".join(selectors.ACTIVE),
        "audit": selectors.request_audit(request_id=r.id),
        # What other open requests share with it, told while it waits for approval.
        "overlaps": request_overlaps(request=r) if r.status == R.PENDING else None,
        # A standing rule (console.rules) that made it, or sent it to another queue.
        "standing": notes_for(r),
        **_break_glass_context(user, r, cooling),
        **_outcome_context(user, r),
    }
    return render(request, "decisions/request_detail.html", ctx)


def _break_glass_context(user, r, cooling):
    """What the request page offers of break-glass (R17): its form while the request waits, to
    someone who may approve and is past their cool-down (its requester too); the review form
    once it was executed so, to someone else who may review it. The services check again."""
    breakable = r.status == R.PENDING and may_break_glass(user) and not cooling
    reviewable = may_review(user, r) and not _cooling(user)
    return {
        "may_break_glass": breakable,
        "break_glass_consequence": break_glass_consequence(r) if breakable else "",
        "may_review": reviewable,
        # An approver or administrator learns that it exists, though an administrator has not
        # turned it on: otherwise no page would say so.
        "break_glass_off": r.status == R.PENDING
        and not settings.BREAK_GLASS
        and may_break_glass_role(user),
    }


def _outcome_context(user, r):
    """What the request's decisions came to, for its page: the outcome (None before it has
    decided anything), or why it cannot be told."""
    if not outcome_available(r):
        return {"outcome": None}
    try:
        outcome = request_outcome(request=r)
    except OutcomeUnknown as exc:
        return {"outcome": None, "outcome_error": str(exc)}
    return {
        "outcome": outcome,
        "may_retry": outcome.retryable > 0
        and user.has_perm(MAKE_REQUESTS)
        and user.has_perm(VIEW_MESSAGES),
    }


OUTCOME_PAGE = 50


@require_GET
@login_required
@perms_required(VIEW_REQUESTS, VIEW_MESSAGES)
def request_outcome_list(request, request_id):
    """The messages of one of the request's outcome numbers (?state=<category>), a page at a
    time in the frozen order."""
    r = request_or_404(request_id)
    category = request.GET.get("state", "")
    after = request.GET.get("after", "")
    ctx = {"r": r, "category": category, "label": LABELS.get(category), "page": None}
    if category not in LABELS or not (after == "" or after.isdigit()):
        ctx["error"] = f"state is one of {', '.join(LABELS)}"
        return render(request, "decisions/request_outcome.html", ctx, status=400)
    try:
        ctx["page"] = outcome_page(
            request=r, category=category, after=int(after or -1), size=OUTCOME_PAGE
        )
    except OutcomeUnknown as exc:
        ctx["error"] = str(exc)
    return render(request, "decisions/request_outcome.html", ctx)


@require_http_methods(["GET", "POST"])
@login_required
@perms_required(VIEW_REQUESTS, MAKE_REQUESTS, VIEW_MESSAGES)
def request_retry(request, request_id):
    """GET: how many of the messages the request decided are quarantined again, and the form;
    POST: a new reprocess request on exactly those (frozen, and approved like any other)."""
    r = request_or_404(request_id)
    template = "decisions/request_retry.html"
    ctx = {"r": r}
    ctx.update(_outcome_context(request.user, r))
    posted = request.method == "POST"
    form = QuickActionForm(request.POST if posted else None)
    if posted and form.is_valid():
        comment = form.cleaned_data["comment"].strip() or (
            f"Retry: the messages request {r.id} decided that failed again (one click)"
        )
        try:
            created = action_request_create(
                actor=request.user,
                scope={"kind": "failed_again", "request": r.id},
                action=Action(kind=R.REPROCESS),
                comment=comment,
            )
        except (ValidationError, ScopeError) as exc:
            form.add_error(None, why(exc))
        else:
            return _to_created(request, created)
    ctx["form"] = form
    ctx["full_form"] = (
        reverse("request-new") + "?" + urlencode([("scope", "failed_again"), ("request", r.id)])
    )
    if ctx["outcome"] is not None:
        ctx["approval"] = approval_policy(
            actor=request.user, action=Action(kind=R.REPROCESS), count=ctx["outcome"].retryable
        )
    return render(request, template, ctx, status=400 if posted else 200)


@require_GET
@login_required
@perms_required(VIEW_REQUESTS)
def request_ids(request, request_id):
    return frozen_ids_response(request_or_404(request_id))


# --- Error notifications ------------------------------------------------------------------------


@require_GET
@login_required
@perms_required(VIEW_MESSAGES)
def notification_list(request):
    form = NotificationFilterForm(request.GET)
    ctx = {"form": form, "page": None}
    if form.is_valid():
        filters = form.filters()
        try:
            ctx["page"] = selectors.notification_list(
                filters=filters, limit=NOTIFICATIONS_PAGE, before=form.cleaned_data["before"]
            )
        except selectors.BadCursor as exc:
            form.add_error(None, str(exc))
        ctx["query"] = QueryDict(mutable=True)
        ctx["query"].update(filters)
    status = 200 if form.is_valid() else 400
    return render(request, "decisions/notification_list.html", ctx, status=status)
