"""Signing in with OpenID Connect: to the provider and back (console.sso.oidc does the protocol,
console.sso.signin what a sign-in does here), and signing out of the provider too."""

import logging
import time

from authlib.common.errors import AuthlibBaseError
from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET
from joserfc.errors import JoseError
from requests import RequestException

from console.accounts.landing import landing_url
from console.audit.services import audit_record
from console.sso.oidc import claims_read, oidc_client, oidc_enabled
from console.sso.signin import SignInRefused, provider_sign_in

log = logging.getLogger(__name__)

BACKEND = "console.sso.backends.LocalPasswordBackend"
NEXT = "sso_next"


def _next(request, value):
    if value and url_has_allowed_host_and_scheme(
        value, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return value
    return ""


@require_GET
def oidc_sign_in(request):
    """To the provider's sign-in page (the authorization code flow, with PKCE and a nonce)."""
    if not oidc_enabled():
        raise Http404("OpenID Connect is not configured")
    request.session[NEXT] = _next(request, request.GET.get("next", ""))
    callback = request.build_absolute_uri(reverse("oidc-callback"))
    try:
        return oidc_client().authorize_redirect(request, callback)
    except (RequestException, AuthlibBaseError, ValueError, KeyError) as error:
        log.warning("OpenID provider unreachable at sign-in: %s", error)
        return _refused(request, "The sign-in provider cannot be reached; try again shortly.")


def _refused(request, reason, status=403):
    return render(
        request,
        "registration/login_refused.html",
        {"reason": reason, "provider_name": settings.OIDC_PROVIDER_NAME},
        status=status,
    )


@require_GET
def oidc_callback(request):
    """Back from the provider: the code exchanged for tokens, the ID token checked, the person
    signed in with the roles their groups give."""
    if not oidc_enabled():
        raise Http404("OpenID Connect is not configured")
    client = oidc_client()
    try:
        token = client.authorize_access_token(request, leeway=settings.OIDC_LEEWAY_SECONDS)
    except (AuthlibBaseError, JoseError, ValueError, KeyError, TypeError) as error:
        reason = str(getattr(error, "description", "") or error)[:300]
        audit_record(
            actor="anonymous",
            action="sso.sign_in_refused",
            details={"provider": "oidc", "reason": reason},
        )
        return _refused(request, f"The sign-in did not complete: {reason}")
    except RequestException as error:
        log.warning("OpenID provider unreachable at the callback: %s", error)
        return _refused(request, "The sign-in provider cannot be reached; try again shortly.")
    if "userinfo" not in token:
        return _refused(request, "The provider sent no ID token.")
    try:
        user = provider_sign_in("oidc", claims_read(token["userinfo"]))
    except SignInRefused as refusal:
        return _refused(request, f"You cannot sign in here: {refusal}.")
    after = request.session.pop(NEXT, "")
    login(request, user, backend=BACKEND)
    request.session["sso_provider"] = "oidc"
    request.session["sso_id_token"] = token.get("id_token", "")
    request.session["sso_refresh_token"] = token.get("refresh_token", "")
    request.session["sso_checked_at"] = time.time()
    return redirect(after or landing_url(user))


class LogoutView(auth_views.LogoutView):
    """Django's sign-out; after a provider's sign-in, on to the provider's own sign-out (its
    end_session_endpoint, where it has one), which comes back to the login page."""

    def post(self, request, *args, **kwargs):
        id_token = request.session.get("sso_id_token", "")
        response = super().post(request, *args, **kwargs)
        if not (id_token and oidc_enabled()):
            return response
        try:
            ending = oidc_client().create_logout_url(
                post_logout_redirect_uri=request.build_absolute_uri(reverse("login")),
                id_token_hint=id_token,
            )
        except (RuntimeError, RequestException, AuthlibBaseError) as error:
            log.warning("the provider's sign-out is not available: %s", error)
            return response
        return redirect(ending["url"])
