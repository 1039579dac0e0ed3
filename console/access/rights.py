"""Which changes grow an account's rights (each one waits for a second administrator: R19), and
the cool-down before a new or changed account may approve."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.utils import timezone

from console.access.models import AccountRights


def _name(permission):
    return f"{permission.content_type.app_label}.{permission.codename}"


def permissions_held(user):
    """The permission names `user` holds now, through their roles and of their own, read from the
    database (not the per-request cache a user object keeps)."""
    held = Permission.objects.filter(Q(group__user=user) | Q(user=user)).select_related(
        "content_type"
    )
    return {_name(p) for p in held}


def rights_added(user, items):
    """The permission names `items` (roles, or permissions) would give `user` that they do not
    hold now, sorted: empty when the change adds nothing (a viewer's role to an operator)."""
    if user.is_superuser:
        return []  # holds every permission already
    wanted = set()
    for item in items:
        if isinstance(item, Group):
            wanted |= {_name(p) for p in item.permissions.select_related("content_type")}
        else:
            wanted.add(_name(item))
    return sorted(wanted - permissions_held(user)) if wanted else []


def permissions_by_pk(pks):
    return list(Permission.objects.select_related("content_type").filter(pk__in=pks))


def rights_changed(user_id, at=None):
    """Stamp `user_id`'s rights as changed now: the approver cool-down starts again."""
    AccountRights.objects.update_or_create(
        user_id=user_id, defaults={"changed_at": at or timezone.now()}
    )


def approver_cooldown_waive(user, *, reason):
    """Date `user`'s account and rights back past the cool-down, recorded with `reason`. For the
    demo's accounts only (manage.py create_demo_users, on the embedded default): a newcomer
    trying the product approves at once. Runs on the server, inside the trust boundary."""
    from console.access.actor import acting_name
    from console.audit.services import audit_record

    then = timezone.now() - timedelta(hours=settings.APPROVER_COOLDOWN_HOURS, minutes=1)
    type(user).objects.filter(pk=user.pk).update(date_joined=then)
    rights_changed(user.pk, at=then)
    audit_record(
        actor=acting_name(),
        action="user.cooldown_waived",
        target_type="user",
        target_id=user.get_username(),
        details={"reason": reason},
    )


def approver_cooldown_until(user):
    """When `user` may approve: APPROVER_COOLDOWN_HOURS after the account was created or its
    rights last changed, whichever is later."""
    stamp = AccountRights.objects.filter(user_id=user.pk).values_list("changed_at", flat=True)
    since = max([user.date_joined, *stamp])
    return since + timedelta(hours=settings.APPROVER_COOLDOWN_HOURS)


def approver_cooldown_ends(user):
    """When `user`'s approver cool-down ends, while it lasts (a page says so rather than offer a
    button that would refuse); None once it is over."""
    until = approver_cooldown_until(user)
    return until if until > timezone.now() else None


def approver_cooldown_check(user):
    """Refuse an approval by an account created or changed too recently: an account cannot be
    made (or promoted) and used to approve at once."""
    until = approver_cooldown_ends(user)
    if until is not None:
        raise PermissionDenied(
            "this account was created or had its rights changed less than "
            f"{settings.APPROVER_COOLDOWN_HOURS} hours ago: it may approve from "
            f"{until:%Y-%m-%d %H:%M} UTC"
        )
