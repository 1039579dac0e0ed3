"""Reading role grants back, with their audit entries, and people's rights to send by hand."""

from console.access.models import IngestRight, RoleGrant
from console.audit.models import AuditEntry
from console.permissions import INGEST_MESSAGES, permission_words


def grants(*, status=None, decided=None):
    qs = RoleGrant.objects.select_related("user", "role", "queue", "requested_by", "decided_by")
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


def role_permissions(role):
    """What the role lets one do, in words (console.permissions.WORDS), not as codenames."""
    return sorted(
        permission_words(f"{p.content_type.app_label}.{p.codename}")
        for p in role.permissions.select_related("content_type")
    )


def grant_permissions(grant):
    """What the grant gives, in words: its role's permissions, or the sending into its queue."""
    if grant.role_id is not None:
        return role_permissions(grant.role)
    return [f"{permission_words(INGEST_MESSAGES)} by hand into {grant.queue.name}"]


def ingest_rights():
    """Everyone's rights to send by hand, by user and queue."""
    return IngestRight.objects.select_related("user", "queue", "grant").order_by(
        "user__username", "queue__name"
    )


def ingest_queue_names(user):
    """The names of the queues `user` may send into by hand, read now (R19: at each call)."""
    return set(IngestRight.objects.filter(user=user).values_list("queue__name", flat=True))
