"""The page a refused login gets (a pair locked out, or an address made to wait), and the
administrators' screen of the lockouts and throttles in force, with a button to lift each. User
names on these pages were typed by whoever failed to log in: they reach the templates as plain
strings and are escaped there."""

from datetime import timedelta

from axes.helpers import get_client_username, get_cool_off
from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from console.accounts.lockouts import selectors, services
from console.forms import NoAutocompleteForm
from console.permissions import MANAGE_USERS, perms_required


def lockout_page(request, original_response=None, credentials=None):
    """Axes' AXES_LOCKOUT_CALLABLE: the answer to a refused login, in place of the login page.
    429 with Retry-After: the wait of a throttled address, or the lockout's length for a pair.
    JSON (`detail`, `retry_after`) under /api/ and to a client that asks for JSON."""
    wait = getattr(request, "login_wait_seconds", 0)
    if wait:
        detail = (
            "Too many failed logins from your address: your password was not checked. "
            f"Try again in {wait} second{'s' if wait != 1 else ''}."
        )
        context = {
            "seconds": wait,
            "until": timezone.now() + timedelta(seconds=wait),
            "delay_max": settings.LOGIN_ADDRESS_DELAY_MAX_SECONDS,
        }
        return _refusal(request, "registration/login_wait.html", context, detail, wait)
    cool_off = get_cool_off(request)
    minutes = int(cool_off.total_seconds() // 60)
    context = {
        "username": get_client_username(request, credentials) or "",
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "minutes": minutes,
        # Each refused attempt counts as a failure too: the lockout runs from the latest one.
        "until": timezone.now() + cool_off,
    }
    detail = (
        "Too many failed logins for this user name from your address: its logins from here are "
        f"refused for {minutes} minute{'s' if minutes != 1 else ''} after the last failed "
        "attempt, or until an administrator lifts the lockout."
    )
    return _refusal(
        request, "registration/lockout.html", context, detail, int(cool_off.total_seconds())
    )


def _wants_json(request):
    accept = request.headers.get("Accept", "")
    return (
        request.path.startswith("/api/")
        or request.headers.get("X-Requested-With") == "XMLHttpRequest"
        or (accept.startswith("application/json") and "text/html" not in accept)
    )


def _refusal(request, template, context, detail, retry_after):
    if _wants_json(request):
        response = JsonResponse({"detail": detail, "retry_after": retry_after}, status=429)
    else:
        response = render(request, template, context, status=429)
    response["Retry-After"] = str(retry_after)
    return response


class LiftForm(NoAutocompleteForm):
    username = forms.CharField(required=False, max_length=selectors.USERNAME_MAX)
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
    in_force = selectors.lockout_list()
    return render(
        request,
        "accounts/lockouts.html",
        {
            "pairs": [lockout for lockout in in_force if lockout.kind == selectors.PAIR],
            "throttled": [lockout for lockout in in_force if lockout.kind == selectors.ADDRESS],
            "failure_limit": settings.AXES_FAILURE_LIMIT,
            "address_limit": settings.LOGIN_ADDRESS_LIMIT,
            "delay_max": settings.LOGIN_ADDRESS_DELAY_MAX_SECONDS,
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
    services.lockout_lift(actor=request.user, username=username, ip=ip)
    if username and ip:
        lifted = f"Lockout of {username} from {ip} lifted: that user may log in from there again."
    elif ip:
        lifted = f"Throttle of {ip} lifted: every failed login from it is forgotten."
    else:
        lifted = f"Lockouts of {username} lifted: it may log in from every address again."
    messages.success(request, lifted)
    return redirect("lockout-list")
