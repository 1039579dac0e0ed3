"""The permissions the console's screens and API check, by name, and their DRF form.
console.accounts.roles says which role holds which."""

from rest_framework.permissions import BasePermission

VIEW_MESSAGES = "readmodels.view_messageindex"
VIEW_BODY = "readmodels.view_body"
VIEW_GROUPS = "readmodels.view_failuregroup"
VIEW_STATS = "readmodels.view_queuestat"
VIEW_QUEUES = "queues.view_queue"
CHANGE_QUEUE = "queues.change_queue"


def has_perms(*perms):
    """A DRF permission class granting a signed-in user who holds every one of `perms`.

    An anonymous caller is refused too, and DRF answers 401 for it (the token authenticator's
    challenge), 403 for a signed-in user without the permissions.
    """

    class HasPerms(BasePermission):
        message = f"this needs the permission(s) {', '.join(perms)}"

        def has_permission(self, request, view):
            user = request.user
            return bool(user and user.is_authenticated and user.has_perms(perms))

    HasPerms.__name__ = f"HasPerms({', '.join(perms)})"
    return HasPerms
