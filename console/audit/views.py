"""The audit screen: the trail, filtered and paged, its chain's status, a full check on demand
and the CSV export. Everything in an entry's actor, target and details may have been typed by
someone else (comments, reasons, user names tried at login): it reaches the template as plain
strings and is escaped there; nothing here marks anything safe."""

import json
from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponseBadRequest, QueryDict
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from console.audit import selectors
from console.audit.exports import audit_csv_response
from console.audit.forms import AuditFilterForm
from console.audit.services import audit_checkpoint_take
from console.audit.watch import audit_verify_watched
from console.moments import span_text
from console.permissions import CHECKPOINT_AUDIT, EXPORT_AUDIT, VIEW_AUDIT, perms_required
from console.plurals import counted
from console.views import redirect_back

PROBLEMS_SHOWN = 10


@require_GET
@login_required
@perms_required(VIEW_AUDIT)
def audit_list(request):
    form = AuditFilterForm(request.GET)
    ctx = {
        "form": form,
        "page": None,
        "status": selectors.audit_chain_status(),
        "checkpoint_every": span_text(timedelta(seconds=settings.AUDIT_CHECKPOINT_SECONDS)),
    }
    valid = form.is_valid()
    if valid:
        data = form.cleaned_data
        page = selectors.audit_page(
            filters=form.filters(),
            after=data["after"],
            before=data["before"],
            size=selectors.PAGE_SIZE,
        )
        ctx["page"] = page
        ctx["rows"] = [(entry, _details_text(entry.details)) for entry in page.rows]
    # Page and export links keep the filters, not the cursor.
    ctx["query"] = QueryDict(mutable=True)
    for name in selectors.FILTER_FIELDS:
        if request.GET.get(name):
            ctx["query"][name] = request.GET[name]
    return render(request, "audit/audit_list.html", ctx, status=200 if valid else 400)


def _details_text(details):
    return json.dumps(details, sort_keys=True, ensure_ascii=False) if details else ""


@require_POST
@login_required
@perms_required(VIEW_AUDIT)
def audit_verify_now(request):
    """The whole chain walked now. Slow on a long trail, which is fine for an explicit button."""
    result = audit_verify_watched()
    if result.ok:
        messages.success(
            request, f"Audit trail intact: {counted(result.entries, 'entry', 'entries')} checked."
        )
    else:
        messages.error(
            request,
            f"Audit trail NOT intact: {len(result.problems)} problem(s) in "
            f"{result.entries} entries.",
        )
        for problem in result.problems[:PROBLEMS_SHOWN]:
            messages.error(request, problem)
    return redirect_back(request, default="audit-list")


@require_POST
@login_required
@perms_required(VIEW_AUDIT, CHECKPOINT_AUDIT)
def audit_checkpoint_now(request):
    """A checkpoint of the chain's head now, besides the scheduler's (console.audit.tasks)."""
    checkpoint = audit_checkpoint_take(actor=request.user, via="page")
    messages.success(
        request,
        f"Checkpoint #{checkpoint.seq} taken: the chain's head is on file, signed, outside "
        "the database.",
    )
    return redirect_back(request, default="audit-list")


@require_GET
@login_required
@perms_required(VIEW_AUDIT, EXPORT_AUDIT)
def audit_export(request):
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        problems = "; ".join(str(e) for errors in form.errors.values() for e in errors)
        return HttpResponseBadRequest(
            f"invalid filters: {problems}", content_type="text/plain; charset=utf-8"
        )
    return audit_csv_response(actor=request.user, filters=form.filters(), via="page")
