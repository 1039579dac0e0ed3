"""The lake query screens: the list with a form to run a new query, and one query's page with
its progress (polled by static/js/lake_query.js from the API) and its result by keyset.

Everything a result row holds comes from messages (ids, queues, senders, reasons) and is
attacker-controlled: the templates escape it, nothing here marks anything safe."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.lakequery import selectors, services
from console.lakequery.forms import LakeQueryForm
from console.lakequery.models import LakeQuery
from console.lakequery.permissions import may_cancel, may_see
from console.permissions import (
    MAKE_REQUESTS,
    RUN_QUERIES,
    VIEW_BODY,
    VIEW_GROUPS,
    VIEW_QUERIES,
    perms_required,
)

AFTER_MAX = 1000


def query_or_404(user, query_id):
    """The query, or 404 for an id that is unknown, not a number, or too big for one; 403 if it
    searched bodies and `user` may not read them. The screens' and the API's."""
    try:
        number = int(query_id)
    except (TypeError, ValueError):
        number = 0
    query = selectors.lake_query_get(query_id=number)
    if query is None:
        raise Http404("no such lake query")
    if not may_see(user, query):
        raise PermissionDenied("this query searched bodies, which you may not read")
    return query


@require_http_methods(["GET", "POST"])
@login_required
@perms_required(VIEW_QUERIES)
def lake_query_list(request):
    """GET: recent queries and, for those who may run one, the form. POST: run a new one."""
    can_run = request.user.has_perm(RUN_QUERIES)
    body = request.user.has_perm(VIEW_BODY)
    form = None
    status = 200
    if request.method == "POST":
        if not can_run:
            raise PermissionDenied("you may not run lake queries")
        form = LakeQueryForm(request.POST, body=body)
        if form.is_valid():
            try:
                query = services.lake_query_create(actor=request.user, criteria=form.criteria())
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, f"Lake query {query.id} is queued.")
                return redirect("lake-query-detail", query.id)
        status = 400
    elif can_run:
        form = LakeQueryForm(body=body)
    ctx = {
        "form": form,
        "queries": selectors.lake_query_list(user=request.user),
        "timeout_seconds": settings.LAKE_QUERY_TIMEOUT_SECONDS,
    }
    return render(request, "lakequery/lake_query_list.html", ctx, status=status)


@require_GET
@login_required
@perms_required(VIEW_QUERIES)
def lake_query_detail(request, query_id):
    query = query_or_404(request.user, query_id)
    after = request.GET.get("after", "")[:AFTER_MAX] or None
    page = selectors.lake_query_results(query=query, after=after)
    ctx = {
        "query": query,
        "page": page,
        "after": after,
        "can_cancel": not query.final and may_cancel(request.user, query),
        "can_request": query.kind == LakeQuery.SEARCH
        and query.status == LakeQuery.DONE
        and query.matched > 0
        and request.user.has_perm(MAKE_REQUESTS),
    }
    return render(request, "lakequery/lake_query_detail.html", ctx)


@require_POST
@login_required
@perms_required(VIEW_QUERIES)
def lake_query_cancel(request, query_id):
    query = query_or_404(request.user, query_id)
    try:
        services.lake_query_cancel(actor=request.user, query=query)
    except ValidationError as exc:
        messages.info(request, exc.messages[0])
    else:
        messages.success(request, f"Lake query {query.id} is cancelled.")
    return redirect("lake-query-detail", query.id)


@require_POST
@login_required
@perms_required(VIEW_QUERIES, RUN_QUERIES, VIEW_BODY, VIEW_GROUPS)
def why_fail(request, fingerprint):
    """Ask why a failure group's messages fail (from the group's page): a lake query, followed
    on its own page."""
    try:
        query = services.why_fail_create(actor=request.user, fingerprint=fingerprint)
    except ValidationError as exc:
        raise Http404(exc.messages[0]) from None
    messages.success(request, f"Lake query {query.id} is queued: why these messages fail.")
    return redirect("lake-query-detail", query.id)
