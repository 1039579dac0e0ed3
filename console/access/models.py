"""Role grants waiting for a second administrator, roles held because of a sign-in provider's
groups, people's rights to send messages into a queue by hand, and when an account's rights last
changed."""

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models


class RoleGrant(models.Model):
    """A right that grows what an account may do, asked for one user by one administrator, or by
    a sign-in provider's group (console.sso): it takes effect only when an administrator (another
    one) confirms it (four eyes, as for a bulk action; R19). Either a role, or (`queue`) the
    right to send messages by hand into that queue (IngestRight)."""

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
    role = models.ForeignKey(
        Group, on_delete=models.CASCADE, related_name="+", null=True, blank=True
    )
    # For a grant of the right to send messages by hand into this queue, instead of a role.
    queue = models.ForeignKey(
        "queues.Queue", on_delete=models.CASCADE, related_name="+", null=True, blank=True
    )
    status = models.CharField(max_length=10, choices=STATUSES, default=PENDING)
    # The administrator who asked; none when a provider's group asked (`source` says which).
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="role_grants_requested",
    )
    # "" for an administrator's grant; the provider ("oidc", "ldap") whose groups asked for it.
    source = models.CharField(max_length=10, blank=True, default="")
    source_groups = models.JSONField(default=list, blank=True)  # the provider's groups that asked
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
            ),
            models.UniqueConstraint(
                fields=["user", "queue"],
                condition=models.Q(status="pending"),
                name="uq_pending_queue_grant",
            ),
            # A role, or a queue's sending by hand: one of the two.
            models.CheckConstraint(
                condition=models.Q(role__isnull=False, queue__isnull=True)
                | models.Q(role__isnull=True, queue__isnull=False),
                name="ck_grant_role_or_queue",
            ),
        ]

    def __str__(self):
        return f"grant of {self.what} to {self.user.get_username()} ({self.status})"

    @property
    def what(self):
        """What it gives, in words: "the role approver", "sending by hand into orders"."""
        if self.role_id is not None:
            return f"the role {self.role.name}"
        return f"sending by hand into {self.queue.name}"

    @property
    def asked_by(self):
        """Who asked, as shown and recorded: the administrator, or the provider."""
        if self.requested_by_id is not None:
            return self.requested_by.get_username()
        return f"provider:{self.source}"


class ProviderRole(models.Model):
    """A role a user holds because a sign-in provider (console.sso) put them in a group that
    maps to it: taken away at the sign-in that no longer shows that group. A role granted by an
    administrator has no row here, and no provider takes it away."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="provider_roles"
    )
    role = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="+")
    provider = models.CharField(max_length=10)
    groups = models.JSONField(default=list)  # the provider's groups that give it
    since = models.DateTimeField()
    # The administrator who confirmed it, for a role that needs four eyes (None: it needs none,
    # or the organisation trusts its provider for those: SSO_TRUST_PRIVILEGED_GROUPS).
    confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "role"], name="uq_provider_role"),
        ]

    def __str__(self):
        return f"{self.role.name} of user {self.user_id} from {self.provider}"


class IngestRight(models.Model):
    """A person's right to send messages by hand into one queue (POST /api/v1/messages, signed
    in): held by nobody by default, given by a role grant a second administrator confirmed, and
    taken away at once (R19). It stops an operator from walking around R17 (fail a message, then
    send an edited copy in) unless two administrators agreed that this person sends into this
    queue. A service account sends through its role (the application role) instead."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ingest_rights"
    )
    queue = models.ForeignKey("queues.Queue", on_delete=models.CASCADE, related_name="+")
    since = models.DateTimeField()
    grant = models.ForeignKey(
        RoleGrant, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "queue"], name="uq_ingest_right"),
        ]

    def __str__(self):
        return f"user {self.user_id} sends by hand into queue {self.queue_id}"


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
