from django.conf import settings
from django.contrib.auth import views as auth_views

from console.accounts.landing import landing_url


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
