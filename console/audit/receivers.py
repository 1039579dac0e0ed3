"""Logins and failed logins go to the audit trail. Django announces them by signal only."""

from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver

from console.audit.services import audit_record


def _client(request):
    if request is None:
        return {}
    return {
        "ip": request.META.get("REMOTE_ADDR", ""),
        "user_agent": request.META.get("HTTP_USER_AGENT", "")[:300],
    }


@receiver(user_logged_in, dispatch_uid="audit-login")
def _logged_in(sender, request, user, **kwargs):
    audit_record(actor=user, action="login", details=_client(request))


@receiver(user_logged_out, dispatch_uid="audit-logout")
def _logged_out(sender, request, user, **kwargs):
    if user is not None:
        audit_record(actor=user, action="logout", details=_client(request))


@receiver(user_login_failed, dispatch_uid="audit-login-failed")
def _login_failed(sender, credentials, request=None, **kwargs):
    # The username tried is recorded; the password never is (Django already masks it).
    username = str(credentials.get("username", ""))[:150]
    audit_record(
        actor="anonymous",
        action="login.failed",
        target_type="user",
        target_id=username,
        details=_client(request),
    )
