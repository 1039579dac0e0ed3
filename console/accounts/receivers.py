"""What logins do to the lockouts (console.accounts.lockouts). Failed logins themselves are
audited by console.audit.receivers."""

from axes.signals import user_locked_out
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver

from console.accounts.lockouts import client_ip, lockout_forget_own_failures
from console.audit.services import audit_record


@receiver(user_locked_out, dispatch_uid="accounts-locked-out")
def _locked_out(sender, request, username, ip_address, **kwargs):
    # Axes sends this for every refused attempt while a lockout holds, not only the first: each
    # one is in the trail, with the failures counted so far.
    audit_record(
        actor="anonymous",
        action="login.locked_out",
        target_type="user",
        target_id=str(username or "")[:150],
        details={
            "ip": ip_address or "",
            "user_agent": request.META.get("HTTP_USER_AGENT", "")[:300],
            "failures": getattr(request, "axes_failures_since_start", None),
        },
    )


@receiver(user_logged_in, dispatch_uid="accounts-forget-own-failures")
def _logged_in(sender, request, user, **kwargs):
    if request is not None:
        lockout_forget_own_failures(username=user.get_username(), ip=client_ip(request))
