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
