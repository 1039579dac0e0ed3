"""The role grants screens: ask for a role for someone, and confirm or reject someone else's
request, as bulk actions are approved. Administrators only; the services check every rule
again (four eyes, nobody for themselves, the cool-down)."""

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.access import selectors, services
from console.access.models import RoleGrant as G
from console.forms import LimitedForm
from console.permissions import MANAGE_USERS, perms_required

COMMENT_MAX = 2000


class GrantAskForm(LimitedForm):
    user = forms.ModelChoiceField(
        queryset=get_user_model().objects.filter(is_active=True).order_by("username"),
        to_field_name="username",
    )
    role = forms.ModelChoiceField(queryset=Group.objects.order_by("name"), to_field_name="name")
    comment = forms.CharField(required=False, max_length=COMMENT_MAX, widget=forms.Textarea)


class CommentForm(LimitedForm):
    comment = forms.CharField(required=False, max_length=COMMENT_MAX, strip=False)


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
                actor=request.user, user=data["user"], role=data["role"], comment=data["comment"]
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
        "sensitive_roles": selectors.sensitive_role_names(),
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
        "permissions": selectors.role_permissions(grant.role),
    }
    return render(request, "access/grant_detail.html", ctx)


def _act(request, grant_id, service, done):
    grant = get_object_or_404(G, id=grant_id)
    form = CommentForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(form.errors["comment"]))
        return redirect("role-grant-detail", grant.id)
    try:
        grant = service(actor=request.user, grant=grant, comment=form.cleaned_data["comment"])
    except ValidationError as exc:
        messages.error(request, _why(exc))
    else:
        messages.success(request, done(grant))
    # PermissionDenied goes up: Django answers 403 with its reason.
    return redirect("role-grant-detail", grant.id)


@require_POST
@login_required
@perms_required(MANAGE_USERS)
def grant_confirm(request, grant_id):
    return _act(
        request,
        grant_id,
        services.role_grant_confirm,
        lambda g: f"{g.user.get_username()} now holds the role {g.role.name}.",
    )


@require_POST
@login_required
@perms_required(MANAGE_USERS)
def grant_reject(request, grant_id):
    return _act(
        request, grant_id, services.role_grant_reject, lambda g: f"Role grant {g.id} is rejected."
    )


@require_POST
@login_required
@perms_required(MANAGE_USERS)
def grant_withdraw(request, grant_id):
    return _act(
        request,
        grant_id,
        services.role_grant_withdraw,
        lambda g: f"Role grant {g.id} is withdrawn.",
    )
