"""My account: one's e-mail address (a form), roles and what they let one do, and the queues
one sends into by hand."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from console.access.selectors import ingest_queue_names
from console.accounts.profile.selectors import account_roles
from console.accounts.profile.services import EMAIL_MAX, account_email_set
from console.forms import LimitedForm


class EmailForm(LimitedForm):
    email = forms.CharField(
        max_length=EMAIL_MAX,
        required=False,
        label="E-mail address",
        help_text="Where the alerts you subscribe to by e-mail are sent. Empty: none.",
    )


@require_http_methods(["GET", "POST"])
@never_cache
@login_required
def my_account(request):
    """GET: the account, its roles and the e-mail form; POST: set the e-mail address."""
    posted = request.method == "POST"
    form = EmailForm(request.POST if posted else {"email": request.user.email})
    if posted and form.is_valid():
        try:
            kept = account_email_set(actor=request.user, email=form.cleaned_data["email"])
        except ValidationError as exc:
            form.add_error("email", exc)
        else:
            said = f"Alerts by e-mail now go to {kept}." if kept else "No e-mail address is set."
            messages.success(request, said)
            return redirect("my-account")
    ctx = {
        "form": form,
        "roles": account_roles(request.user),
        "ingest_queues": sorted(ingest_queue_names(request.user)),
    }
    status = 400 if posted and form.errors else 200
    return render(request, "accounts/my_account.html", ctx, status=status)
