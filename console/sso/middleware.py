"""A session signed in with OpenID Connect asks the provider again every OIDC_RECHECK_MINUTES,
with its refresh token: a person the provider no longer knows (or no longer lets in) is refused
there, and is signed out and deactivated here at once, not at their session's end; a change of
groups takes effect too. A provider that cannot be reached is asked again a minute later, and
the session goes on meanwhile (the provider being down must not sign everyone out)."""

import logging
import time
from urllib.parse import urlsplit

from authlib.common.errors import AuthlibBaseError
from django.conf import settings
from django.contrib.auth import logout
from django.contrib.auth.views import redirect_to_login
from django.http import JsonResponse
from requests import RequestException

from console.access.actor import acting_as
from console.sso.oidc import claims_read, oidc_client, oidc_enabled
from console.sso.signin import provider_actor, provider_refused, roles_apply

log = logging.getLogger(__name__)

RETRY_SECONDS = 60
REFUSED = "sso_refused"


def oidc_recheck(user, session):
    """Ask the provider about `user` with the session's refresh token. True: they may go on
    (their roles follow their groups now); False: refused and deactivated. None: not asked (no
    refresh token, or the provider did not answer)."""
    refresh_token = session.get("sso_refresh_token")
    if not refresh_token:
        return None
    client = oidc_client()
    try:
        token = client.fetch_access_token(grant_type="refresh_token", refresh_token=refresh_token)
        claims = claims_read(client.userinfo(token=token))
    except AuthlibBaseError as error:
        if getattr(error, "error", "") not in ("invalid_grant", "access_denied"):
            log.warning("OpenID provider answered the session check with %s", error)
            return None
        provider_refused(user, "oidc", f"the provider refused the session: {error}"[:300])
        return False
    except (RequestException, ValueError) as error:
        log.warning("OpenID provider unreachable for the session check: %s", error)
        return None
    session["sso_refresh_token"] = token.get("refresh_token") or refresh_token
    if token.get("id_token"):
        session["sso_id_token"] = token["id_token"]
    with acting_as(provider_actor("oidc")):
        roles_apply(user, "oidc", claims.groups)
    return True


class ProviderRecheck:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        session = getattr(request, "session", None)
        user = getattr(request, "user", None)
        # The session's mark first: asking `user` loads the account, which most requests
        # (/metrics, /healthz, a token's API call) never need.
        if (
            session is not None
            and session.get("sso_provider") == "oidc"
            and oidc_enabled()
            and user is not None
            and user.is_authenticated
        ):
            due = session.get("sso_checked_at", 0) + settings.OIDC_RECHECK_MINUTES * 60
            now = time.time()
            if now >= due:
                outcome = oidc_recheck(user, session)
                if outcome is False:
                    logout(request)
                    request.session[REFUSED] = "Your sign-in provider no longer lets you in."
                    if request.path.startswith("/api/"):
                        return JsonResponse({"detail": "signed out by the provider"}, status=401)
                    return redirect_to_login(request.get_full_path())
                session["sso_checked_at"] = (
                    now if outcome else now - settings.OIDC_RECHECK_MINUTES * 60 + RETRY_SECONDS
                )
        return self.get_response(request)


def _origin(url):
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None


class ProviderFormAction:
    """Signing out posts a form whose answer redirects to the provider's sign-out page: every
    page's Content-Security-Policy lets forms lead there (form-action covers redirects), and
    nowhere else. Inside django-csp's middleware, which reads `_csp_update` off the response."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if oidc_enabled():
            metadata = oidc_client().server_metadata  # as loaded, never fetched here
            origins = {
                _origin(settings.OIDC_ISSUER),
                _origin(metadata.get("end_session_endpoint", "")),
            }
            origins.discard(None)
            update = getattr(response, "_csp_update", None) or {}
            update["form-action"] = [*update.get("form-action", []), *sorted(origins)]
            response._csp_update = update
        return response
