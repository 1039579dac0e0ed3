"""What logins do to the lockouts (console.accounts.lockouts), and what losing the application
role does to an account's tokens. Failed logins themselves are audited by
console.audit.receivers."""

from axes.signals import user_locked_out
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in
from django.db.models.signals import m2m_changed
from django.dispatch import receiver

from console.access.service_accounts import holds_service_role
from console.accounts.lockouts.backends import client_ip
from console.accounts.lockouts.services import lockout_forget_own_failures
from console.accounts.models import ApiToken
from console.accounts.tokens.services import tokens_revoke_all
from console.audit.services import audit_record

User = get_user_model()


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


@receiver(m2m_changed, sender=User.groups.through, dispatch_uid="accounts-service-role-gone")
def _service_role_gone(sender, instance, action, reverse, pk_set, **kwargs):
    """An account that loses the application role loses its tokens, each revoked and recorded:
    they opened nothing from that moment (authentication asks at each call, R19), and must not
    open anything again should the account be made a service account anew."""
    if action == "pre_clear" and reverse:
        instance._accounts_cleared = list(instance.user_set.all())
        return
    if action not in ("post_remove", "post_clear"):
        return
    if not reverse:
        users = [instance]
    elif action == "post_clear":
        users, instance._accounts_cleared = getattr(instance, "_accounts_cleared", []), []
    else:
        users = list(User.objects.filter(pk__in=pk_set or ()))
    for user in users:
        if ApiToken.objects.filter(user=user).exists() and not holds_service_role(user):
            tokens_revoke_all(user=user, reason="the account no longer holds the application role")
