"""The console's screens. Every view checks its permission on the server; reading changes
nothing (R12). Data from messages (bodies, headers, reasons, ids, queue names, senders) reaches
the templates as plain strings and is escaped there; nothing here marks anything safe."""

import base64
import functools
import json
import uuid
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponseBadRequest, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.access.selectors import ingest_queue_names
from console.accounts.landing import landing_url
from console.browse import charts, counts, selectors
from console.browse.body import body_render, headers_download_response, raw_body_response
from console.browse.exports import BODIES_REFUSED, MessageExportForm, message_export_response
from console.browse.forms import (
    FILTER_FIELDS,
    OPEN,
    MessageFilterForm,
    MessageSendForm,
    SavedFilterNameForm,
)
from console.browse.freshness import counts_staleness
from console.browse.history_notes import history_notes_attach
from console.browse.lineage import message_body_lineage
from console.browse.message_words import is_batch_mate_reason
from console.browse.search import MIN_TEXT
from console.browse.search import search as search_for
from console.browse.services import (
    message_body_read,
    message_body_read_record,
    saved_filter_delete,
    saved_filter_save,
)
from console.forms import too_long_text
from console.ingest.by_hand import BY_HAND_ONLY, messages_send_by_hand, sent_by_person
from console.ingest.demo import demo_progress
from console.ingest.records import ID_MAX_LENGTH
from console.list_pages import understood
from console.notes.lifecycle import STATE_NAMES, group_lifecycle
from console.notes.models import GROUP, MESSAGE
from console.notes.selectors import investigations_attach, owner_filter_clean
from console.permissions import (
    VIEW_BODY,
    VIEW_GROUPS,
    VIEW_MESSAGES,
    VIEW_STATS,
    perms_required,
)
from console.processes.selectors import process_warnings
from console.queues.models import Queue
from console.views import redirect_back
from workers.engine.states import FLOW_DELIVERED, FLOW_FAILED, FLOW_QUARANTINED, FLOW_RELEASED


def _auditors_to_the_audit_trail(view):
    """The console's home is the dashboard; whoever may not see it (an auditor, a person whose
    role waits for a second administrator) is taken to their own landing page by the logo and
    "/" instead of to a 403."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        user = request.user
        if not user.has_perm(VIEW_STATS):
            return redirect(landing_url(user))
        return view(request, *args, **kwargs)

    return wrapped


@require_GET
@login_required
@_auditors_to_the_audit_trail
@perms_required(VIEW_STATS)
def dashboard(request):
    chosen = request.GET.get("range", "")
    chosen = chosen if chosen in charts.RANGES else charts.DEFAULT_RANGE
    stats = counts.dashboard_stats()
    queues = [queue for queue, _ in stats["per_queue"]]
    charted = request.GET.get("queue", "")
    charted = charted if charted in queues else ""
    flows = counts.flow_series(hours=charts.RANGES[chosen], queue=charted or None)
    series = flows[FLOW_QUARANTINED]
    disabled = counts.queues_disabled()
    ctx = {
        "stats": stats,
        # What the page shows rows and cards for: the poller reloads the page when it changes.
        "live_shape": json.dumps(
            [
                [state for state, _ in stats["totals"]],
                [queue for queue, _ in stats["per_queue"]],
                [q.name for q in disabled],
            ]
        ),
        "poll_seconds": settings.DASHBOARD_POLL_SECONDS,
        "stale": counts_staleness(now=timezone.now()),
        "refresh_seconds": settings.REFRESH_INTERVAL_SECONDS,
        "refresh_on_commit": settings.REFRESH_ON_COMMIT,
        "disabled": disabled,
        "groups": _with_sparklines(selectors.group_list(limit=selectors.TOP_GROUPS, muted=False)),
        "groups_muted": selectors.groups_muted_count(),
        "inflow": charts.hourly_bars(series),
        "quarantine_flows": charts.hourly_lines(
            [
                ("in", "into quarantine", series),
                ("out", "out of quarantine (decided)", flows[FLOW_RELEASED]),
            ]
        ),
        "rates": charts.hourly_lines(
            [
                ("delivered", "delivered", flows[FLOW_DELIVERED]),
                ("failed", "failed attempts", flows[FLOW_FAILED]),
            ]
        ),
        "ranges": list(charts.RANGES),
        "range": chosen,
        "chart_queues": queues,
        "chart_queue": charted,
        "inflow_total": sum(n for _, n in series),
        "inflow_peak": max((n for _, n in series), default=0),
        "first_run": None if stats["updated_at"] else counts.first_run(),
        "demo": demo_progress(),
        "processes_missing": process_warnings(),
    }
    return render(request, "browse/dashboard.html", ctx)


# What a link to the message list keeps, and what a saved filter is: the filters, sort and size.
KEPT_PARAMS = (*FILTER_FIELDS, "sort", "size")
# The failure groups' queue filter: as long as a queue's name may be.
QUEUE_FILTER_MAX = Queue._meta.get_field("name").max_length


@require_http_methods(["GET", "POST"])
@login_required
@perms_required(VIEW_MESSAGES)
def message_list(request):
    """GET: the browser. POST: "select all N matching", which carries the filter, not ids (issue 4
    turns it into an action request); for now it shows what the filter selects."""
    selecting = request.method == "POST"
    # A filter it cannot read is dropped and said, and the list shows without it.
    form, _, dropped = understood(
        request, MessageFilterForm, request.POST if selecting else request.GET, user=request.user
    )
    form.offer(counts.filter_choices())
    ctx = {
        "form": form,
        "selecting": selecting,
        "page": None,
        "count": None,
        "may_send": bool(ingest_queue_names(request.user)),
    }
    valid = form.is_valid()
    if valid:
        filters = form.filters()
        data = form.cleaned_data
        size = data["size"]
        at = data["at"] or 1
        try:
            page = selectors.message_page(filters=filters, size=size, **form.keyset())
        except selectors.BadCursor as exc:
            form.add_error(None, str(exc))
            page = selectors.message_page(filters=filters, sort=data["sort"], size=size)
            at = 1
        if not (data["after"] or data["before"]):
            at = 1  # the first page starts at 1, whatever a link said
        ctx["page"] = page
        investigations_attach(page.rows, kind=MESSAGE)  # each row's owner badge
        ctx["count"] = selectors.message_match_count(filters=filters)
        ctx["span"] = (at, at + len(page.rows) - 1)
        ctx["next_at"] = at + len(page.rows)
        ctx["prev_at"] = max(1, at - size)
        ctx["sort"] = data["sort"]
        ctx["headers"] = _sort_headers(data["sort"])
        ctx["filter_items"] = [(name, _as_param(filters[name])) for name in filters]
        ctx["quick_query"] = urlencode([("scope", "filter"), *ctx["filter_items"]])
        ctx["export_query"] = urlencode([*ctx["filter_items"], ("sort", data["sort"])])
    # The page links keep the filters, sort and page size, whichever way they came (GET or the
    # POST above).
    source = request.POST if selecting else request.GET
    ctx["query"] = QueryDict(mutable=True)
    for name in KEPT_PARAMS:
        if source.get(name) and name not in dropped:
            ctx["query"][name] = source[name]
    ctx["saved_filters"] = request.user.saved_filters.all()
    status = 200 if valid and not dropped else 400
    return render(request, "browse/message_list.html", ctx, status=status)


@require_GET
@login_required
@perms_required(VIEW_MESSAGES)
def message_export(request):
    """The message list as a file (console.browse.exports): its filters and sort, `format` csv
    or jsonl, and `bodies=1` for the bodies too, which needs VIEW_BODY (a 403 without it)."""
    form = MessageExportForm(request.GET, user=request.user)
    if not form.is_valid():
        problems = "; ".join(
            f"{name}: {error}" if name != "__all__" else str(error)
            for name, errors in form.errors.items()
            for error in errors
        )
        return HttpResponseBadRequest(
            f"invalid export: {problems}", content_type="text/plain; charset=utf-8"
        )
    if form.wants_bodies and not request.user.has_perm(VIEW_BODY):
        raise PermissionDenied(BODIES_REFUSED)
    return message_export_response(actor=request.user, via="page", **form.export())


@require_POST
@login_required
@perms_required(VIEW_MESSAGES)
def saved_filter_create(request):
    """Save the list's current filters (posted as the list's own fields) under a name."""
    form = MessageFilterForm(request.POST, user=request.user)
    if not form.is_valid():
        messages.error(request, "These filters are not valid: apply them first, then save.")
        return redirect("message-list")
    posted = request.POST
    query = urlencode([(name, posted[name]) for name in KEPT_PARAMS if posted.get(name)])
    named = SavedFilterNameForm(request.POST)
    try:
        if not named.is_valid():
            raise ValidationError(named.errors["name"])
        saved = saved_filter_save(owner=request.user, name=named.cleaned_data["name"], query=query)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Saved as \u201c{saved.name}\u201d.")
    return redirect(reverse("message-list") + (f"?{query}" if query else ""))


@require_POST
@login_required
@perms_required(VIEW_MESSAGES)
def saved_filter_remove(request, filter_id):
    if not saved_filter_delete(owner=request.user, filter_id=filter_id):
        raise Http404("no such saved filter")
    messages.success(request, "The saved filter is deleted.")
    return redirect_back(request, default="message-list")


# The message table's columns, and the sort key a click on each header chooses (None: not
# sortable). A header sorts descending first (the newest, the most), then flips.
_COLUMNS = (
    ("id", None),
    ("queue", "queue"),
    ("state", None),
    ("attempts", "delivery_count"),
    ("last failure", "last_failure"),
    ("exception", None),
    ("reason", None),
    ("sender", None),
)


def _sort_headers(sort):
    """[(label, the sort a click chooses or None, "ascending"/"descending"/"")]."""
    key, desc = sort.lstrip("-"), sort.startswith("-")
    headers = []
    for label, column in _COLUMNS:
        if column is None:
            headers.append((label, None, ""))
        elif column == key:
            order = "descending" if desc else "ascending"
            headers.append((label, column if desc else f"-{column}", order))
        else:
            headers.append((label, f"-{column}", ""))
    return headers


def _as_param(value):
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


@require_GET
@login_required
@perms_required(VIEW_MESSAGES)
def message_detail(request, message_id):
    can_read_body = request.user.has_perm(VIEW_BODY)
    view = selectors.message_view(message_id=message_id, with_body=can_read_body)
    if view is None:
        raise Http404("no such message")
    history_notes_attach(view.history)
    body = None
    if can_read_body and view.stored:
        body = body_render(view.stored.get("body"), content_type=view.stored.get("content_type"))
        message_body_read_record(actor=request.user, message_id=message_id, via="page")
    lineage = message_body_lineage(
        message_id=message_id,
        history=view.history,
        enqueued_at=view.stored.get("enqueued_at"),
        with_bodies=body is not None,  # its read is the one just recorded
    )
    conversation_id = view.stored.get("conversation_id") or (
        view.indexed.conversation_id if view.indexed else ""
    )
    ctx = {
        "m": view,
        # R19: a message a person sent in by hand says so (an application's does not).
        "sent_by_person": sent_by_person(view.history),
        "body": body,
        "lineage": lineage,
        "can_read_body": can_read_body,
        "conversation_id": conversation_id,
        "conversation": selectors.message_conversation(
            conversation_id=conversation_id, exclude=message_id
        ),
        "group": selectors.group_get(fingerprint=view.indexed.group_id)
        if view.indexed is not None and view.indexed.group_id
        else None,
        "may_send": bool(ingest_queue_names(request.user)),
    }
    return render(request, "browse/message_detail.html", ctx)


@require_GET
@login_required
@perms_required(VIEW_MESSAGES)
def search(request):
    """The search box's answer: the message itself for an id, otherwise where the text is."""
    result = search_for(query=request.GET.get("q", ""), groups=request.user.has_perm(VIEW_GROUPS))
    if result.go_to is not None:
        return redirect("message-detail", message_id=result.go_to)
    return render(request, "browse/search.html", {"result": result, "min_text": MIN_TEXT})


@require_GET
@login_required
@perms_required(VIEW_MESSAGES, VIEW_BODY)
def message_raw(request, message_id):
    found = message_body_read(actor=request.user, message_id=message_id, via="raw")
    if found is None:
        raise Http404("no such message")
    return raw_body_response(found[0], message_id=message_id)


@require_GET
@login_required
@perms_required(VIEW_MESSAGES)
def message_headers(request, message_id):
    """Its headers whole, as stored: the page shows at most HEADERS_SHOWN, cut."""
    text = selectors.message_headers_text(message_id=message_id)
    if text is None:
        raise Http404("no such message")
    return headers_download_response(text, message_id=message_id)


@require_GET
@login_required
@perms_required(VIEW_GROUPS)
def group_list(request):
    queue, queue_error = request.GET.get("queue", ""), None
    if len(queue) > QUEUE_FILTER_MAX:
        # Refused in words, not cut: a cut name would filter by a queue nobody asked for.
        queue_error = too_long_text("Queue", limit=QUEUE_FILTER_MAX, length=len(queue))
        queue = ""
    resolved = request.GET.get("resolved") == "1"
    owner, owner_error = request.GET.get("owner", "")[:150], None
    try:
        chosen = owner_filter_clean(owner, user=request.user)
    except ValidationError as exc:
        chosen, owner_error = "", " ".join(exc.messages)
    status, status_error = request.GET.get("status", ""), None
    if status and status not in STATE_NAMES:
        status_error = f"Not understood: status {status[:40]!r}; one of {', '.join(STATE_NAMES)}."
        status = ""
    groups = selectors.group_list(
        queue=queue or None, resolved=resolved, owner=chosen or None, status=status or None
    )
    groups, waiting = selectors.groups_apart(
        investigations_attach(_with_sparklines(groups), kind=GROUP)
    )
    ctx = {
        "groups": groups,
        "waiting": waiting,
        "queue": queue,
        "resolved": resolved,
        "owner": owner,
        "owner_error": owner_error,
        "queue_error": queue_error,
        "queue_max": QUEUE_FILTER_MAX,
        "status": status,
        "status_error": status_error,
        "statuses": list(STATE_NAMES.items()),
    }
    bad = owner_error or queue_error or status_error
    return render(request, "browse/group_list.html", ctx, status=400 if bad else 200)


def _with_sparklines(groups):
    """The groups, each with `.spark`: its recent failures by hour (charts.sparkline)."""
    groups = list(groups)
    recent = counts.group_recent(groups=groups)
    for group in groups:
        group.spark = charts.sparkline(recent.get(group.fingerprint))
    return groups


@require_GET
@login_required
@perms_required(VIEW_GROUPS, VIEW_MESSAGES)
def group_detail(request, fingerprint):
    group = selectors.group_get(fingerprint=fingerprint)
    if group is None:
        raise Http404("no such failure group")
    # What needs attention first; the resolved members stay one click away.
    everyone = request.GET.get("members") == "all"
    filters = {"group": fingerprint} if everyone else {"group": fingerprint, "state": OPEN}
    ctx = {
        "group": group,
        "lifecycle": group_lifecycle(fingerprint=fingerprint, first_seen=group.first_seen),
        "moves": [
            (state, name) for state, name in STATE_NAMES.items() if state != group.status.state
        ],
        "batch_mates": is_batch_mate_reason(group.pattern),
        "states": counts.state_counts(group.states),
        "page": selectors.message_page(filters=filters),
        "everyone": everyone,
        "quick_query": urlencode({"scope": "group", "group": fingerprint}),
    }
    return render(request, "browse/group_detail.html", ctx)


# --- Sending a message by hand ----------------------------------------------------------------


def _copied(request, message_id):
    """The send form's starting values from the message `message_id` (its queue, metadata,
    headers, and its body if the person may read bodies; the read is recorded as the page's
    is), and what the page says of the copy; (None, why) when there is none to copy."""
    if not request.user.has_perm(VIEW_MESSAGES):
        return None, "You may not read messages: nothing was copied."
    can_read_body = request.user.has_perm(VIEW_BODY)
    view = selectors.message_view(message_id=message_id, with_body=can_read_body)
    if view is None or not view.stored:
        return None, "No such message: nothing was copied."
    stored = view.stored
    initial = {
        "queue": view.original_queue or view.queue,
        "content_type": stored.get("content_type") or "",
        "headers": stored.get("headers") or "",
        "conversation_id": stored.get("conversation_id") or "",
        "sender": stored.get("sender") or "",
    }
    said = f"A copy of {message_id}: give it an id of its own, change what you need, and send."
    if can_read_body:
        body = stored.get("body") or b""
        message_body_read_record(actor=request.user, message_id=message_id, via="copy")
        try:
            initial["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            initial.update(body=base64.b64encode(body).decode("ascii"), body_encoding="base64")
    else:
        said += " Its body is not copied: you may not read bodies."
    return initial, said


@require_http_methods(["GET", "POST"])
@login_required
def message_send(request):
    """Send a new message in by hand, or a copy of one (?copy=<id>): for a person with a right to
    send into some queues (console.ingest.by_hand), through the same checks as the API."""
    queues = sorted(ingest_queue_names(request.user))
    if not queues:
        raise PermissionDenied(BY_HAND_ONLY)
    copy_of = request.GET.get("copy", "")[:ID_MAX_LENGTH] or request.POST.get("copy_of", "")
    copy_of = copy_of[:ID_MAX_LENGTH]
    copy_said = None
    if request.method == "POST":
        form = MessageSendForm(request.POST, queues=queues)
        if form.is_valid():
            try:
                result = messages_send_by_hand(
                    actor=request.user, records=[form.record()], copied_from=copy_of or None
                )
            except PermissionDenied as exc:
                form.add_error("queue", str(exc))
            else:
                sent = form.cleaned_data["message_id"]
                if result.accepted:
                    messages.success(request, f"Sent: {sent} is in {form.cleaned_data['queue']}.")
                    return redirect("message-detail", message_id=sent)
                if result.duplicates:
                    form.add_error("message_id", "a message with this id and body is in already")
                else:
                    form.add_error(None, "; ".join(e.message for e in result.errors))
    else:
        initial = {"message_id": f"by-hand-{uuid.uuid4().hex[:12]}", "queue": queues[0]}
        if copy_of:
            copied, copy_said = _copied(request, copy_of)
            initial.update(copied or {})
            copy_of = copy_of if copied else ""
        form = MessageSendForm(initial=initial, queues=queues)
    ctx = {"form": form, "copy_of": copy_of, "copy_said": copy_said}
    return render(request, "browse/message_send.html", ctx, status=400 if form.errors else 200)
