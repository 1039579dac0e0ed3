"""The notes panel's forms (templates/notes/_panel.html, on the message and group pages): each
posts the target's kind and id, calls a service, and goes back to the target's page with what
happened, or why not. Permissions are checked here and again in the services."""

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from console.notes import lifecycle, services
from console.notes.forms import NoteForm, TicketForm
from console.notes.models import COMMENT_MAX, GROUP, MESSAGE
from console.permissions import INVESTIGATE, VIEW_GROUPS, VIEW_NOTES, WRITE_NOTES, perms_required

_PAGES = {MESSAGE: "message-detail", GROUP: "group-detail"}


def _target(request):
    kind, target_id = request.POST.get("kind", ""), request.POST.get("target_id", "")
    if kind not in _PAGES or not target_id or len(target_id) > 200 or "\x00" in target_id:
        raise Http404("no such message or failure group")
    return kind, target_id


def _back(kind, target_id):
    return redirect(reverse(_PAGES[kind], args=[target_id]) + "#notes")


def _refused(request, exc):
    messages.error(request, " ".join(getattr(exc, "messages", None) or [str(exc)]))


def _errors(form):
    return " ".join(error for errors in form.errors.values() for error in errors)


def _carry_out(request, kind, target_id, change, done):
    """Make the change (a service call), then say `done`, or why the service refused; and go
    back to the page the form was on."""
    try:
        change()
    except (ValidationError, PermissionDenied) as exc:
        _refused(request, exc)
    else:
        messages.success(request, done)
    return _back(kind, target_id)


def _panel_form(*perms):
    """A form of the panel, posted by someone signed in who holds `perms`: the view is called
    with the target's kind and id."""

    def decorate(view):
        @require_POST
        @login_required
        @perms_required(*perms)
        @wraps(view)
        def posted(request):
            return view(request, *_target(request))

        return posted

    return decorate


def _form_view(perm, form_class, change, not_done, done):
    """A panel form posting `form_class`, by someone who also holds `perm`: `change` (a service)
    is called with the form's data as its keywords; `not_done` says a bad form, `done` success."""

    @_panel_form(VIEW_NOTES, perm)
    def posted(request, kind, target_id):
        form = form_class(request.POST)
        if not form.is_valid():
            messages.error(request, f"{not_done}: {_errors(form)}")
            return _back(kind, target_id)
        data = form.cleaned_data
        return _carry_out(
            request,
            kind,
            target_id,
            lambda: change(actor=request.user, kind=kind, target_id=target_id, **data),
            done,
        )

    return posted


note_add_view = _form_view(
    WRITE_NOTES, NoteForm, services.note_add, "The note is not added", "Your note is added."
)
investigation_take = _form_view(
    INVESTIGATE,
    TicketForm,
    services.investigation_take,
    "Not taken",
    "It is under investigation by you now.",
)
investigation_ticket = _form_view(
    INVESTIGATE,
    TicketForm,
    services.investigation_ticket_set,
    "The ticket link is not changed",
    "The ticket link is saved.",
)


@_panel_form(VIEW_NOTES, INVESTIGATE)
def investigation_hand_over(request, kind, target_id):
    to = request.POST.get("to", "")[:150]
    return _carry_out(
        request,
        kind,
        target_id,
        lambda: services.investigation_hand_over(
            actor=request.user, kind=kind, target_id=target_id, to=to
        ),
        f"Handed over to {to}.",
    )


@_panel_form(VIEW_NOTES, INVESTIGATE)
def investigation_release(request, kind, target_id):
    return _carry_out(
        request,
        kind,
        target_id,
        lambda: services.investigation_release(actor=request.user, kind=kind, target_id=target_id),
        "Released: nobody is investigating it now.",
    )


# Where a lifecycle form goes back to: the page it was on (a fixed name, never a URL it sends).
_GROUP_PAGES = {"dashboard": "dashboard", "groups": "group-list"}


@require_POST
@login_required
@perms_required(VIEW_GROUPS, INVESTIGATE)
def group_status_view(request, fingerprint):
    """Move a failure group (acknowledge, resolve, ignore, open again), from its page, the group
    list or the dashboard."""
    if lifecycle.failure_group(fingerprint=fingerprint) is None:
        raise Http404("no such failure group")
    state = request.POST.get("state", "")
    try:
        status = lifecycle.group_status_set(
            actor=request.user,
            fingerprint=fingerprint,
            state=state,
            comment=request.POST.get("comment", "")[: COMMENT_MAX + 1],
        )
    except (ValidationError, PermissionDenied) as exc:
        _refused(request, exc)
    else:
        messages.success(request, f"The failure group is {status.name} now.")
    page = _GROUP_PAGES.get(request.POST.get("back", ""))
    if page:
        return redirect(reverse(page))
    return redirect(reverse("group-detail", args=[fingerprint]) + "#lifecycle")
