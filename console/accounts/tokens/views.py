"""The "Service tokens" screen (administrators): the service accounts, with their tokens; making a
service account (its application role waits for a second administrator) and a token for one.
A person has no token (R19): they call the API signed in.

A new token is shown once, in the answer to the POST that made it: never in a URL, a message or
the session, and the page is not cached. Token names are the users' text: the templates escape
them."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST
from knox.settings import knox_settings

from console.accounts.models import NAME_MAX
from console.accounts.tokens.selectors import (
    DAYS_MAX,
    MANAGE_SERVICE_TOKENS,
    service_accounts,
    token_find,
)
from console.accounts.tokens.services import service_account_create, token_create, token_revoke
from console.forms import LimitedForm
from console.permissions import perms_required
from console.views import redirect_back

USERNAME_MAX = 150
COMMENT_MAX = 2000


class ServiceTokenForm(LimitedForm):
    account = forms.ModelChoiceField(queryset=None, to_field_name="username")
    name = forms.CharField(max_length=NAME_MAX, help_text="What the token is for.")
    days = forms.IntegerField(
        min_value=1, max_value=DAYS_MAX, help_text=f"How long it lasts: 1 to {DAYS_MAX} days."
    )

    def __init__(self, *args, accounts, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["account"].queryset = accounts
        # API_TOKEN_DAYS, read when the form is made, not when the module is loaded.
        self.fields["days"].initial = knox_settings.TOKEN_TTL.days


class ServiceAccountForm(LimitedForm):
    username = forms.CharField(
        max_length=USERNAME_MAX,
        label="New service account",
        help_text="The application's name, as its account's user name.",
    )
    comment = forms.CharField(
        required=False,
        max_length=COMMENT_MAX,
        widget=forms.Textarea,
        help_text="What the application is, for the administrator who confirms it.",
    )


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
        data = form.cleaned_data
        try:
            created = token_create(
                actor=request.user, user=data["account"], name=data["name"], days=data["days"]
            )
        except (ValidationError, PermissionDenied) as exc:
            form.add_error(None, "; ".join(getattr(exc, "messages", [str(exc)])))
        else:
            form = ServiceTokenForm(accounts=accounts)
    ctx = {
        "form": form,
        "account_form": ServiceAccountForm(),
        "accounts": accounts,
        "created": created,
    }
    return render(request, "accounts/service_tokens.html", ctx, status=400 if form.errors else 200)


@require_POST
@login_required
@perms_required(MANAGE_SERVICE_TOKENS)
def service_account_new(request):
    """Make a service account; its application role waits for a second administrator."""
    form = ServiceAccountForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            user, grant = service_account_create(
                actor=request.user, username=data["username"], comment=data["comment"]
            )
        except ValidationError as exc:
            form.add_error(None, "; ".join(exc.messages))
        else:
            messages.success(
                request,
                f"Service account {user.get_username()} made, with no password. Its application "
                f"role waits for a second administrator (role grant {grant.id}); then make it a "
                "token here.",
            )
            return redirect("role-grant-detail", grant.id)
    ctx = {
        "form": ServiceTokenForm(accounts=service_accounts()),
        "account_form": form,
        "accounts": service_accounts(),
        "created": None,
    }
    return render(request, "accounts/service_tokens.html", ctx, status=400)


@require_POST
@login_required
def token_revoke_view(request, key):
    """Revoke a service account's token (administrators); back to the page."""
    token = token_find(actor=request.user, key=key)
    if token is None or not token_revoke(actor=request.user, token=token):
        raise Http404("no such token")
    messages.success(request, f"Token {token.name} ({token.token_key}) revoked.")
    return redirect_back(request, default="service-tokens")
