"""The token screens: "API tokens" (one's own) and "Service tokens" (administrators, for the
application role's accounts).

A new token is shown once, in the answer to the POST that made it: never in a URL, a message or
the session, and those pages are not cached. Token names are the users' text: the templates
escape them."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST
from knox.settings import knox_settings

from console.accounts.models import NAME_MAX
from console.accounts.tokens import (
    DAYS_MAX,
    MANAGE_SERVICE_TOKENS,
    service_accounts,
    token_create,
    token_find,
    token_revoke,
    tokens_of,
)
from console.forms import LimitedForm
from console.permissions import perms_required
from console.views import redirect_back


class TokenForm(LimitedForm):
    name = forms.CharField(max_length=NAME_MAX, help_text="What the token is for.")
    days = forms.IntegerField(
        min_value=1, max_value=DAYS_MAX, help_text=f"How long it lasts: 1 to {DAYS_MAX} days."
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # API_TOKEN_DAYS, read when the form is made, not when the module is loaded.
        self.fields["days"].initial = knox_settings.TOKEN_TTL.days


class ServiceTokenForm(TokenForm):
    account = forms.ModelChoiceField(queryset=None, to_field_name="username")

    field_order = ["account", "name", "days"]

    def __init__(self, *args, accounts, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["account"].queryset = accounts


def _create(request, form, *, user):
    """Make the token the valid form asks for: (the row, the token), or None with the service's
    refusal among the form's errors."""
    data = form.cleaned_data
    try:
        return token_create(actor=request.user, user=user, name=data["name"], days=data["days"])
    except ValidationError as exc:
        form.add_error(None, exc)
        return None


@require_http_methods(["GET", "POST"])
@never_cache
@login_required
def my_tokens(request):
    """GET: one's tokens and the form; POST: make one, and show it this once."""
    posted = request.method == "POST"
    form = TokenForm(request.POST if posted else None)
    created = None
    if posted and form.is_valid():
        created = _create(request, form, user=request.user)
        if created:
            form = TokenForm()
    ctx = {"form": form, "tokens": tokens_of(request.user), "created": created}
    return render(request, "accounts/my_tokens.html", ctx, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@never_cache
@login_required
@perms_required(MANAGE_SERVICE_TOKENS)
def service_tokens(request):
    """The service accounts with their tokens; POST: make one for one of them, shown once."""
    accounts = service_accounts()
    posted = request.method == "POST"
    form = ServiceTokenForm(request.POST if posted else None, accounts=accounts)
    created = None
    if posted and form.is_valid():
        created = _create(request, form, user=form.cleaned_data["account"])
        if created:
            form = ServiceTokenForm(accounts=accounts)
    ctx = {"form": form, "accounts": accounts, "created": created}
    return render(request, "accounts/service_tokens.html", ctx, status=400 if form.errors else 200)


@require_POST
@login_required
def token_revoke_view(request, key):
    """Revoke one's own token, or (administrators) a service account's; back to the page."""
    token = token_find(actor=request.user, key=key)
    if token is None or not token_revoke(actor=request.user, token=token):
        raise Http404("no such token")
    messages.success(request, f"Token {token.name} ({token.token_key}) revoked.")
    return redirect_back(request, default="my-tokens")
