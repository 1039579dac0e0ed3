"""Role grants waiting for a second administrator, and when an account's rights last changed."""

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models


class RoleGrant(models.Model):
    """A role that gives the right to approve, or to grant roles, asked for one user by one
    administrator: it takes effect only when another administrator confirms it (four eyes, as
    for a bulk action)."""

    PENDING = "pending"
    CONFIRMED = "confirmed"
    REJECTED = "rejected"
    WITHDRAWN = "withdrawn"
    EXPIRED = "expired"
    STATUSES = [
        (PENDING, "waiting for a second administrator"),
        (CONFIRMED, "confirmed"),
        (REJECTED, "rejected"),
        (WITHDRAWN, "withdrawn"),
        (EXPIRED, "expired"),
    ]

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="role_grants"
    )
    role = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=10, choices=STATUSES, default=PENDING)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="role_grants_requested"
    )
    requested_at = models.DateTimeField()
    comment = models.TextField(blank=True, default="")
    expires_at = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="role_grants_decided",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-id"]
        constraints = [
            # One open grant of a role to a user at a time.
            models.UniqueConstraint(
                fields=["user", "role"],
                condition=models.Q(status="pending"),
                name="uq_pending_role_grant",
            )
        ]

    def __str__(self):
        return f"grant of {self.role.name} to {self.user.get_username()} ({self.status})"


class AccountRights(models.Model):
    """When an account's rights last changed (roles or permissions added, reactivated, its
    password set by someone else, made staff or superuser): the approver cool-down counts from
    the later of this and the account's creation."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    changed_at = models.DateTimeField()

    def __str__(self):
        return f"rights of user {self.user_id} changed at {self.changed_at:%Y-%m-%d %H:%M}"
