from django.conf import settings
from django.contrib.auth import views as auth_views
from django.shortcuts import resolve_url

from console.permissions import VIEW_AUDIT, VIEW_STATS


def landing_url(user):
    """Where a user lands after logging in: the dashboard, unless it would refuse them and the
    audit trail would not (the auditor role)."""
    if not user.has_perm(VIEW_STATS) and user.has_perm(VIEW_AUDIT):
        return resolve_url("audit-list")
    return resolve_url("dashboard")


class LoginView(auth_views.LoginView):
    """Django's login; a ?next= still wins over the landing page."""

    redirect_authenticated_user = True

    def get_default_redirect_url(self):
        return landing_url(self.request.user)

    def get_context_data(self, **kwargs):
        # "Sign in with <provider>" beside the password form, or instead of it when local
        # passwords are off (kept, folded, for the break-glass administrator).
        return super().get_context_data(
            oidc=bool(settings.OIDC_ISSUER),
            provider_name=settings.OIDC_PROVIDER_NAME,
            local_passwords=settings.LOCAL_PASSWORDS,
            # Why a provider refused someone whose password it accepted (console.sso): from the
            # OpenID session check, or from the directory at this very login.
            sso_refused=self.request.session.pop("sso_refused", "")
            or getattr(self.request, "sso_refused", ""),
            **kwargs,
        )
