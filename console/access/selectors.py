"""Reading role grants back, with their audit entries."""

from django.contrib.auth.models import Group

from console.access.models import RoleGrant
from console.access.rights import role_is_sensitive
from console.audit.models import AuditEntry
from console.permissions import permission_words


def grants(*, status=None, decided=None):
    qs = RoleGrant.objects.select_related("user", "role", "requested_by", "decided_by")
    if status is not None:
        qs = qs.filter(status=status)
    if decided:
        qs = qs.exclude(status=RoleGrant.PENDING)
    return qs.order_by("-id")


def pending_count():
    return RoleGrant.objects.filter(status=RoleGrant.PENDING).count()


def grant_audit(grant):
    """The grant's own steps, and the change of roles it made."""
    return list(AuditEntry.objects.filter(target_type="role_grant", target_id=str(grant.id)))


def sensitive_role_names():
    return [g.name for g in Group.objects.order_by("name") if role_is_sensitive(g)]


def role_permissions(role):
    """What the role lets one do, in words (console.permissions.WORDS), not as codenames."""
    return sorted(
        permission_words(f"{p.content_type.app_label}.{p.codename}")
        for p in role.permissions.select_related("content_type")
    )
