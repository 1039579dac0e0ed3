"""The lockout page a refused login gets, and the administrators' screen of the lockouts in
force, with a button to lift each. User names on these pages were typed by whoever failed to log
in: they reach the templates as plain strings and are escaped there."""

from axes.helpers import get_client_username, get_cool_off
from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from console.accounts import lockouts
from console.forms import NoAutocompleteForm
from console.permissions import MANAGE_USERS, perms_required


def lockout_page(request, original_response=None, credentials=None):
    """Axes' AXES_LOCKOUT_CALLABLE: the answer to a login refused for a lockout, in place of
    the login page. 429, with the lockout's length as Retry-After."""
    cool_off = get_cool_off(request)
    minutes = int(cool_off.total_seconds() // 60)
    context = {
        "username": get_client_username(request, credentials) or "",
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "minutes": minutes,
        # Each refused attempt counts as a failure too: the lockout runs from the latest one.
        "until": timezone.now() + cool_off,
    }
    response = render(request, "registration/lockout.html", context, status=429)
    response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response


class LiftForm(NoAutocompleteForm):
    username = forms.CharField(required=False, max_length=lockouts.USERNAME_MAX)
    ip = forms.GenericIPAddressField(required=False)

    def clean(self):
        data = super().clean()
        if not data.get("username") and not data.get("ip"):
            raise ValidationError("name a user name or an address")
        return data


@require_GET
@login_required
@perms_required(MANAGE_USERS)
def lockout_list(request):
    return render(
        request,
        "accounts/lockouts.html",
        {
            "lockouts": lockouts.lockout_list(),
            "failure_limit": settings.AXES_FAILURE_LIMIT,
            "minutes": int(get_cool_off(request).total_seconds() // 60),
        },
    )


@require_POST
@login_required
@perms_required(MANAGE_USERS)
def lockout_lift(request):
    form = LiftForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(str(e) for errors in form.errors.values() for e in errors)
        messages.error(request, f"Nothing lifted: {problems}.")
        return redirect("lockout-list")
    username, ip = form.cleaned_data["username"], form.cleaned_data["ip"]
    lockouts.lockout_lift(actor=request.user, username=username, ip=ip)
    messages.success(request, f"Lockout of {username or ip} lifted: it may log in again.")
    return redirect("lockout-list")
