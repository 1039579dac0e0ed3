"""The role grants screens: ask for a role for someone, or for their right to send messages by
hand into a queue, and confirm or reject someone else's request, as bulk actions are approved;
take a right to send by hand away. Administrators only; the services check every rule again
(four eyes, nobody for themselves, service accounts apart, the cool-down)."""

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.access import selectors, services
from console.access.models import RoleGrant as G
from console.forms import LimitedForm
from console.permissions import MANAGE_USERS, perms_required
from console.views import decision_posted

COMMENT_MAX = 2000
# The queues, named by the grant's own key to them (console.access sits below the queues app).
Queue = G._meta.get_field("queue").related_model


def _users():
    return get_user_model().objects.filter(is_active=True).order_by("username")


class GrantAskForm(LimitedForm):
    user = forms.ModelChoiceField(queryset=_users(), to_field_name="username")
    role = forms.ModelChoiceField(
        queryset=Group.objects.order_by("name"), to_field_name="name", required=False
    )
    queue = forms.ModelChoiceField(
        queryset=Queue.objects.order_by("name"),
        to_field_name="name",
        required=False,
        label="or: send messages by hand into the queue",
    )
    comment = forms.CharField(required=False, max_length=COMMENT_MAX, widget=forms.Textarea)

    def clean(self):
        data = super().clean()
        if bool(data.get("role")) == bool(data.get("queue")):
            raise forms.ValidationError("choose a role, or a queue to send into by hand: one")
        return data


class IngestRightForm(LimitedForm):
    user = forms.ModelChoiceField(queryset=_users(), to_field_name="username")
    queue = forms.ModelChoiceField(queryset=Queue.objects.all(), to_field_name="name")


def _why(exc):
    return "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)


@require_http_methods(["GET", "POST"])
@login_required
@perms_required(MANAGE_USERS)
def grant_list(request):
    form = GrantAskForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            grant = services.role_grant_request(
                actor=request.user,
                user=data["user"],
                role=data["role"],
                queue=data["queue"],
                comment=data["comment"],
            )
        except (ValidationError, PermissionDenied) as exc:
            form.add_error(None, _why(exc))
        else:
            if grant is None:
                messages.success(
                    request, f"{data['user'].get_username()} now holds the role {data['role']}."
                )
                return redirect("role-grant-list")
            messages.success(
                request,
                f"Role grant {grant.id} waits for a second administrator to confirm it.",
            )
            return redirect("role-grant-detail", grant.id)
    services.role_grants_expire()
    ctx = {
        "form": form,
        "pending": selectors.grants(status=G.PENDING),
        "recent": selectors.grants(decided=True)[:50],
        "ingest_rights": selectors.ingest_rights(),
    }
    return render(request, "access/grant_list.html", ctx, status=400 if form.errors else 200)


@require_GET
@login_required
@perms_required(MANAGE_USERS)
def grant_detail(request, grant_id):
    services.role_grants_expire()
    grant = get_object_or_404(selectors.grants(), id=grant_id)
    me = request.user
    pending = grant.status == G.PENDING
    ctx = {
        "g": grant,
        "pending": pending,
        "is_requester": grant.requested_by_id == me.pk,
        "is_receiver": grant.user_id == me.pk,
        "may_decide": pending and me.pk not in (grant.requested_by_id, grant.user_id),
        "may_withdraw": pending and grant.requested_by_id == me.pk,
        "audit": selectors.grant_audit(grant),
        "permissions": selectors.grant_permissions(grant),
    }
    return render(request, "access/grant_detail.html", ctx)


def _act(request, grant_id, service, done):
    grant = get_object_or_404(G, id=grant_id)
    back = reverse("role-grant-detail", args=[grant.id])
    return decision_posted(request, service=service, done=done, back=back, grant=grant)


def _decision(service, done):
    """A grant request's confirmation, rejection or withdrawal, posted with a comment from its
    page: `service` makes it, `done(grant)` says so; back to the grant's page."""

    @require_POST
    @login_required
    @perms_required(MANAGE_USERS)
    def posted(request, grant_id):
        return _act(request, grant_id, service, done)

    return posted


grant_confirm = _decision(
    services.role_grant_confirm, lambda g: f"{g.user.get_username()} now has {g.what}."
)
grant_reject = _decision(services.role_grant_reject, lambda g: f"Role grant {g.id} is rejected.")
grant_withdraw = _decision(
    services.role_grant_withdraw, lambda g: f"Role grant {g.id} is withdrawn."
)


@require_POST
@login_required
@perms_required(MANAGE_USERS)
def ingest_right_withdraw(request):
    """Take a person's sending by hand into a queue away, at once; back to the grants page."""
    form = IngestRightForm(request.POST)
    if not form.is_valid():
        messages.error(request, "No such right to send by hand.")
        return redirect("role-grant-list")
    user, queue = form.cleaned_data["user"], form.cleaned_data["queue"]
    # PermissionDenied (one's own) goes up: Django answers 403 with its reason.
    if services.ingest_right_withdraw(actor=request.user, user=user, queue=queue):
        messages.success(
            request, f"{user.get_username()} no longer sends by hand into {queue.name}."
        )
    return redirect("role-grant-list")
