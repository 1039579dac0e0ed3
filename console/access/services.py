"""Role grants (R19): a role that grows an account's rights, or a person's right to send messages
by hand into a queue, is asked for by one administrator and takes effect when a second one
confirms it, as a bulk action is approved. Every step is claimed with a conditional update (two
administrators acting at once cannot both win) and recorded in the audit trail; the role itself
is added under the grant's confirmation, so the user's roles change is recorded too, with the
confirming administrator as its actor. Taking a right away never waits: it lowers rights."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from console.access.models import IngestRight, ProviderRole
from console.access.models import RoleGrant as G
from console.access.receivers import confirmed_grant
from console.access.rights import approver_cooldown_check, rights_added
from console.access.service_accounts import holds_service_role, roles_refusal
from console.audit.services import audit_record
from console.permissions import MANAGE_USERS


def grant_audit_record(*, actor, action, grant, comment=""):
    """Record a step of `grant` in the audit trail: what it gives to whom, who asked, and why."""
    return audit_record(
        actor=actor,
        action=action,
        target_type="role_grant",
        target_id=grant.id,
        details={
            "user": grant.user.get_username(),
            "role": grant.role.name if grant.role_id is not None else None,
            "queue": grant.queue.name if grant.queue_id is not None else None,
            "requested_by": grant.asked_by,
            "comment": comment or "",
        },
    )


def _check_manager(actor, user):
    if not actor.has_perm(MANAGE_USERS):
        raise PermissionDenied("only an administrator grants roles")
    if actor.pk == user.pk:
        raise PermissionDenied("nobody changes their own roles, permissions or status")


def _refusal(user, *, role=None, queue=None):
    """Why `user` may not be given `role` (a group) or the sending by hand into `queue`, as
    things stand; None if they may."""
    name = user.get_username()
    if role is not None:
        if user.groups.filter(pk=role.pk).exists():
            return f"{name} already holds the role {role.name}"
        return roles_refusal(user, [role.name])
    if holds_service_role(user):
        return (
            f"{name} is a service account: it sends messages through the application role, "
            "not by hand"
        )
    if IngestRight.objects.filter(user=user, queue=queue).exists():
        return f"{name} sends by hand into {queue.name} already"
    return None


def role_grant_request(*, actor, user, role=None, queue=None, comment=""):
    """Ask for `role` (a group), or for the right to send messages by hand into `queue`, to be
    given to `user`. What grows their rights waits for a second administrator (returns the
    pending grant); a role that adds nothing they do not hold already is given at once (returns
    None): its change is recorded like any other."""
    _check_manager(actor, user)
    if (role is None) == (queue is None):
        raise ValidationError("a grant gives a role or the sending by hand into a queue: one")
    if refusal := _refusal(user, role=role, queue=queue):
        raise ValidationError(refusal)
    if role is not None and not rights_added(user, [role]):
        user.groups.add(role)
        return None
    now = timezone.now()
    try:
        with transaction.atomic():
            grant = G.objects.create(
                user=user,
                role=role,
                queue=queue,
                requested_by=actor,
                requested_at=now,
                comment=comment or "",
                expires_at=now + timedelta(days=settings.ROLE_GRANT_EXPIRY_DAYS),
            )
            grant_audit_record(
                actor=actor,
                action="role_grant.requested",
                grant=grant,
                comment=comment,
            )
    except IntegrityError:
        raise ValidationError(
            f"a grant of {grant_what(role, queue)} to {user.get_username()} is already waiting"
        ) from None
    return grant


def grant_what(role, queue):
    return f"the role {role.name}" if role is not None else f"sending by hand into {queue.name}"


# What the audit trail calls each decision.
_DECIDED = {G.CONFIRMED: "role_grant.confirmed", G.REJECTED: "role_grant.rejected"}


def _decide(*, actor, grant, to_status, comment):
    if not actor.has_perm(MANAGE_USERS):
        raise PermissionDenied("only an administrator confirms or rejects a role grant")
    if actor.pk == grant.requested_by_id:
        raise PermissionDenied("four eyes: a role grant is confirmed by someone else")
    if actor.pk == grant.user_id:
        raise PermissionDenied("nobody confirms a grant of rights to themselves")
    if to_status == G.CONFIRMED:
        approver_cooldown_check(actor)
        # What held when it was asked may not hold now (the account got a password, a role).
        if refusal := _refusal(grant.user, role=grant.role, queue=grant.queue):
            raise ValidationError(f"role grant {grant.id} cannot be confirmed: {refusal}")
    now = timezone.now()
    with transaction.atomic():
        _expire(now)
        won = G.objects.filter(id=grant.id, status=G.PENDING).update(
            status=to_status, decided_by=actor, decided_at=now, decision_comment=comment or ""
        )
        if won != 1:
            grant.refresh_from_db()
            raise ValidationError(f"role grant {grant.id} is {grant.get_status_display()}")
        grant.refresh_from_db()
        if to_status == G.CONFIRMED and grant.queue_id is not None:
            _ingest_right_give(actor=actor, grant=grant, now=now)
        elif to_status == G.CONFIRMED:
            with confirmed_grant():
                grant.user.groups.add(grant.role)
            if grant.source:
                # Asked for by a provider's group: held while the group is, not for good.
                ProviderRole.objects.update_or_create(
                    user=grant.user,
                    role=grant.role,
                    defaults={
                        "provider": grant.source,
                        "groups": grant.source_groups,
                        "since": now,
                        "confirmed_by": actor,
                    },
                )
        grant_audit_record(
            actor=actor,
            action=_DECIDED[to_status],
            grant=grant,
            comment=comment,
        )
    return grant


def role_grant_confirm(*, actor, grant, comment=""):
    """A second administrator (not the one who asked, not the one who receives it, past the
    cool-down) confirms: the role is given."""
    return _decide(actor=actor, grant=grant, to_status=G.CONFIRMED, comment=comment)


def role_grant_reject(*, actor, grant, comment):
    if not comment or not comment.strip():
        raise ValidationError("a rejection says why: the comment is required")
    return _decide(actor=actor, grant=grant, to_status=G.REJECTED, comment=comment)


def role_grant_withdraw(*, actor, grant, comment=""):
    """The administrator who asked takes it back."""
    if actor.pk != grant.requested_by_id:
        raise PermissionDenied("only the administrator who asked withdraws a role grant")
    with transaction.atomic():
        won = G.objects.filter(id=grant.id, status=G.PENDING).update(
            status=G.WITHDRAWN, decided_at=timezone.now()
        )
        if won != 1:
            raise ValidationError(f"role grant {grant.id} is no longer waiting")
        grant_audit_record(
            actor=actor,
            action="role_grant.withdrawn",
            grant=grant,
            comment=comment,
        )
    grant.refresh_from_db()
    return grant


def role_withdraw(*, actor, user, role):
    """Take a role away: never needs a second person (it lowers rights), never one's own."""
    _check_manager(actor, user)
    user.groups.remove(role)


def _ingest_right_give(*, actor, grant, now):
    IngestRight.objects.get_or_create(
        user=grant.user, queue=grant.queue, defaults={"since": now, "grant": grant}
    )
    audit_record(
        actor=actor,
        action="user.ingest_rights_changed",
        target_type="user",
        target_id=grant.user.get_username(),
        details={"added": [grant.queue.name], "removed": [], "grant": grant.id},
    )


def ingest_right_withdraw(*, actor, user, queue):
    """Take away `user`'s sending by hand into `queue`, at once (it lowers rights), never one's
    own. Returns False if they did not hold it."""
    _check_manager(actor, user)
    with transaction.atomic():
        deleted, _ = IngestRight.objects.filter(user=user, queue=queue).delete()
        if not deleted:
            return False
        audit_record(
            actor=actor,
            action="user.ingest_rights_changed",
            target_type="user",
            target_id=user.get_username(),
            details={"added": [], "removed": [queue.name]},
        )
    return True


def _expire(now):
    for grant_id in G.objects.filter(status=G.PENDING, expires_at__lte=now).values_list(
        "id", flat=True
    ):
        if G.objects.filter(id=grant_id, status=G.PENDING).update(status=G.EXPIRED):
            audit_record(
                actor="system",
                action="role_grant.expired",
                target_type="role_grant",
                target_id=grant_id,
            )


def role_grants_expire(now=None):
    """Mark pending grants past their expiry (shown as expired, never confirmable)."""
    with transaction.atomic():
        _expire(now or timezone.now())


def users_managed():
    """Every user with their roles, for the role grants page."""
    return get_user_model().objects.prefetch_related("groups").order_by("username")


def roles_all():
    return Group.objects.order_by("name")
