"""Every change to who may do what goes to the audit trail, whatever the route (the console, the
Django admin, the API, a command, a shell): users, their roles and permissions, and what each
role holds are recorded from the models' signals, with the actor of console.access.actor.

While serving a request the rules are enforced here too, under every screen (R19): nobody
changes their own roles, permissions or status; a role that grows an account's rights
(console.access.rights) is given only by a confirmed role grant; a permission of one's own, or a
permission added to a role, is never given from the web; the application role goes to a service
account only, which holds nothing else and never gets a password (console.access.service_accounts);
nobody is made superuser from the web. A command runs on the server, inside the trust boundary
(docs/security.md): it is recorded, not refused."""

import contextlib
import contextvars

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from django.dispatch import receiver

from console.access.actor import acting_name, acting_user, in_request
from console.access.rights import permissions_by_pk, rights_added, rights_changed
from console.access.service_accounts import holds_service_role, roles_refusal
from console.audit.services import audit_record
from console.permissions import permission_words

User = get_user_model()

# The fields of a user whose change is recorded (before and after). The password is recorded
# as set, never its hash; last_login is the login's own entry.
FIELDS = ("username", "first_name", "last_name", "email", "is_active", "is_staff", "is_superuser")
# A change to one of these starts the approver cool-down again.
RAISING = ("username", "is_staff", "is_superuser")

_confirmed_grant = contextvars.ContextVar("confirmed_grant", default=False)


@contextlib.contextmanager
def confirmed_grant():
    """Inside: the role grant being applied was confirmed by a second administrator."""
    token = _confirmed_grant.set(True)
    try:
        yield
    finally:
        _confirmed_grant.reset(token)


def _refuse_own(user_id):
    me = acting_user()
    if in_request() and me is not None and me.pk == user_id:
        raise PermissionDenied("nobody changes their own roles, permissions or status")


# --- The user row ---------------------------------------------------------------------------------


def _bookkeeping(instance, update_fields):
    """A save that changes nothing about who may do what: the login's last_login, and Django
    upgrading a password's hash as it checks it (the same password, saved alone, with no new
    one set on the object)."""
    if update_fields is None:
        return False
    fields = set(update_fields)
    return fields <= {"last_login"} or (
        fields == {"password"} and getattr(instance, "_password", None) is None
    )


def _saved(update_fields):
    """The recorded fields a save writes: all, or those of its update_fields."""
    return [f for f in FIELDS if update_fields is None or f in update_fields]


@receiver(pre_save, sender=User, dispatch_uid="access-user-before")
def _user_before(sender, instance, raw=False, update_fields=None, **kwargs):
    instance._access_before = None
    if raw or _bookkeeping(instance, update_fields):
        return
    before = None
    if instance.pk is not None:
        before = User.objects.filter(pk=instance.pk).values(*FIELDS, "password").first()
    instance._access_before = before
    if not in_request():
        return
    status = [f for f in _saved(update_fields) if f in ("is_active", "is_staff", "is_superuser")]
    if before is not None and any(before[f] != getattr(instance, f) for f in status):
        _refuse_own(instance.pk)
    if instance.is_superuser and not (before or {}).get("is_superuser"):
        raise PermissionDenied(
            "superuser status is given on the server by whoever runs it, not from the web"
        )
    if before is not None and holds_service_role(instance):
        _service_account_stays_one(instance, before, update_fields)


def _service_account_stays_one(instance, before, update_fields):
    """A service account never gets a way to sign in, nor staff status: its tokens would then
    act for an account someone can sign in to (R19)."""
    password_set = "password" in (update_fields or ["password"]) and (
        before["password"] != instance.password
    )
    if (password_set and instance.has_usable_password()) or instance.is_staff:
        raise PermissionDenied(
            f"{instance.get_username()} is a service account: it acts through its tokens only, "
            "and never gets a password or staff status"
        )


@receiver(post_save, sender=User, dispatch_uid="access-user-after")
def _user_after(sender, instance, created, raw=False, update_fields=None, **kwargs):
    before = getattr(instance, "_access_before", None)
    instance._access_before = None
    if raw:
        return
    target = {"target_type": "user", "target_id": instance.get_username()}
    if created:
        audit_record(
            actor=acting_name(),
            action="user.created",
            **target,
            details={f: getattr(instance, f) for f in FIELDS},
        )
        return
    if before is None:
        return
    changes = {
        f: {"before": before[f], "after": getattr(instance, f)}
        for f in _saved(update_fields)
        if before[f] != getattr(instance, f)
    }
    if changes:
        action = "user.changed"
        if "is_active" in changes:
            action = "user.activated" if instance.is_active else "user.deactivated"
        audit_record(actor=acting_name(), action=action, **target, details={"changes": changes})
        if any(f in changes for f in RAISING) or (instance.is_active and "is_active" in changes):
            rights_changed(instance.pk)
    if "password" in (update_fields or ["password"]) and before["password"] != instance.password:
        me = acting_user()
        by_self = me is not None and me.pk == instance.pk
        audit_record(
            actor=acting_name(),
            action="user.password_changed" if by_self else "user.password_set",
            **target,
        )
        if not by_self:
            # Whoever set it may now sign in as this account: it does not approve at once.
            rights_changed(instance.pk)


@receiver(post_delete, sender=User, dispatch_uid="access-user-deleted")
def _user_deleted(sender, instance, **kwargs):
    audit_record(
        actor=acting_name(),
        action="user.deleted",
        target_type="user",
        target_id=instance.get_username(),
        details={f: getattr(instance, f) for f in FIELDS},
    )


# --- A user's roles and permissions ---------------------------------------------------------------


def _names(objects):
    return sorted(o.name if isinstance(o, Group) else _perm_name(o) for o in objects)


def _perm_name(permission):
    return f"{permission.content_type.app_label}.{permission.codename}"


def _users_and_items(instance, reverse, model, pk_set):
    """[(user, items)] of an m2m change seen from either side: `items` are the roles or
    permissions it adds or takes away (none named for a clear)."""
    if not reverse:
        return [(instance, _items(model, pk_set))]
    users = User.objects.filter(pk__in=pk_set) if pk_set is not None else instance.user_set.all()
    return [(user, [instance]) for user in users]


def _items(model, pk_set):
    if pk_set is None:
        return []
    if model is Group:
        return list(Group.objects.filter(pk__in=pk_set))
    return permissions_by_pk(pk_set)


def _held(user, kind):
    if kind == "roles":
        return _names(user.groups.all())
    return _names(user.user_permissions.select_related("content_type"))


def _refuse_added(kind, user, items):
    """Refuse, while serving a request, an addition that breaks R19: a role the account may not
    hold (console.access.service_accounts), a role that grows its rights without a confirmed role
    grant, a permission of its own that grows them."""
    if kind == "roles" and (refusal := roles_refusal(user, [role.name for role in items])):
        raise PermissionDenied(refusal)
    added = rights_added(user, items)
    if not added:
        return
    what = ", ".join(permission_words(n) for n in added)
    if kind == "permissions":
        raise PermissionDenied(
            f"a permission of {user.get_username()}'s own ({what}) would grow their rights "
            "outside the roles: rights come with a role, given by a role grant"
        )
    if not _confirmed_grant.get():
        raise PermissionDenied(
            f"{', '.join(sorted(r.name for r in items))} would give {user.get_username()} "
            f"permission for {what}: it takes effect when a second administrator confirms it "
            "(the role grants page)"
        )


def _user_m2m(kind, instance, action, reverse, model, pk_set):
    """Enforce (before) and record (after) one change to users' roles or permissions. What
    each user held before is kept on the signal's instance, the same object before and after
    (a clear names no one afterwards)."""
    if action.startswith("pre_"):
        held = {}
        for user, items in _users_and_items(instance, reverse, model, pk_set):
            if in_request():
                _refuse_own(user.pk)
                if action == "pre_add":
                    _refuse_added(kind, user, items)
            held[user.pk] = (user, _held(user, kind))
        instance._access_held = held
        return
    for user, before in getattr(instance, "_access_held", {}).values():
        after = _held(user, kind)
        added = sorted(set(after) - set(before))
        removed = sorted(set(before) - set(after))
        if not (added or removed):
            continue
        audit_record(
            actor=acting_name(),
            action=f"user.{kind}_changed",
            target_type="user",
            target_id=user.get_username(),
            details={"before": before, "after": after, "added": added, "removed": removed},
        )
        if added:
            rights_changed(user.pk)
    instance._access_held = {}


@receiver(m2m_changed, sender=User.groups.through, dispatch_uid="access-user-roles")
def _user_roles(sender, instance, action, reverse, model, pk_set, **kwargs):
    _user_m2m("roles", instance, action, reverse, model, pk_set)


@receiver(m2m_changed, sender=User.user_permissions.through, dispatch_uid="access-user-perms")
def _user_permissions(sender, instance, action, reverse, model, pk_set, **kwargs):
    _user_m2m("permissions", instance, action, reverse, model, pk_set)


# --- What a role holds ----------------------------------------------------------------------------


@receiver(m2m_changed, sender=Group.permissions.through, dispatch_uid="access-role-perms")
def _role_permissions(sender, instance, action, reverse, model, pk_set, **kwargs):
    if action.startswith("pre_"):
        roles = [instance] if not reverse else list(Group.objects.filter(pk__in=pk_set or []))
        if reverse and pk_set is None:
            roles = list(instance.group_set.all())
        if action == "pre_add" and in_request():
            added = permissions_by_pk(pk_set or []) if not reverse else [instance]
            me = acting_user()
            for role in roles:
                if me is not None and role.user_set.filter(pk=me.pk).exists():
                    raise PermissionDenied("nobody adds rights to a role they hold")
            if added and any(role.user_set.exists() for role in roles):
                # It would grow the rights of everyone who holds the role, with nobody's
                # confirmation (R19). Said in words: the person refused reads this on a page.
                what = ", ".join(permission_words(_perm_name(p)) for p in added)
                raise PermissionDenied(
                    f"permission for {what} is given to a role in the product's own role list "
                    "(applied on the server on each release), not from the web"
                )
        instance._access_roles = {
            role.pk: (role, _names(role.permissions.select_related("content_type")))
            for role in roles
        }
        return
    for role, before in getattr(instance, "_access_roles", {}).values():
        after = _names(role.permissions.select_related("content_type"))
        added, removed = sorted(set(after) - set(before)), sorted(set(before) - set(after))
        if not (added or removed):
            continue
        audit_record(
            actor=acting_name(),
            action="role.permissions_changed",
            target_type="role",
            target_id=role.name,
            details={"before": before, "after": after, "added": added, "removed": removed},
        )
        if added:
            for user_id in role.user_set.values_list("pk", flat=True):
                rights_changed(user_id)
    instance._access_roles = {}


@receiver(post_save, sender=Group, dispatch_uid="access-role-saved")
def _role_saved(sender, instance, created, raw=False, **kwargs):
    if created and not raw:
        audit_record(
            actor=acting_name(), action="role.created", target_type="role", target_id=instance.name
        )


@receiver(post_delete, sender=Group, dispatch_uid="access-role-deleted")
def _role_deleted(sender, instance, **kwargs):
    audit_record(
        actor=acting_name(), action="role.deleted", target_type="role", target_id=instance.name
    )
