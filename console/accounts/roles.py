"""The five roles, as Django groups, and the permissions each one holds.

ROLE_PERMISSIONS is the one place that says who may do what: later issues add their permissions
here and `manage.py seed_roles` applies the mapping. Permissions are named as `has_perm` names
them: "<app_label>.<codename>".
"""

from django.contrib.auth.models import Group, Permission
from django.db import transaction

VIEWER = "viewer"
OPERATOR = "operator"
APPROVER = "approver"
ADMIN = "admin"
AUDITOR = "auditor"

ROLES = (VIEWER, OPERATOR, APPROVER, ADMIN, AUDITOR)

# Read metadata: the read models, queues and the delivery bookkeeping. Not bodies.
_VIEW = (
    "queues.view_queue",
    "delivery.view_deliveryrun",
    "delivery.view_poisonentry",
    "ingest.view_messagekey",
    "readmodels.view_messageindex",
    "readmodels.view_failuregroup",
    "readmodels.view_queuestat",
    "readmodels.view_quarantineinflow",
    "decisions.view_actionrequest",
    "lakequery.view_lakequery",
)
# Bodies can hold personal data: reading them is its own permission, given to those who decide
# what to do with a message (operators and approvers), not to everyone who can see metadata.
BODY = "readmodels.view_body"
# Running a lake query: by metadata; searching bodies needs BODY as well (console.lakequery).
RUN_QUERIES = "lakequery.add_lakequery"
_OPERATE = (*_VIEW, "ingest.add_messagekey", BODY, "decisions.add_actionrequest", RUN_QUERIES)
# Approving is for someone other than the requester (four eyes); the services check that too.
_APPROVE = (*_OPERATE, "decisions.approve_actionrequest")


def _everything_on(app_label, model):
    return tuple(f"{app_label}.{verb}_{model}" for verb in ("view", "add", "change", "delete"))


ROLE_PERMISSIONS = {
    VIEWER: _VIEW,
    OPERATOR: _OPERATE,
    APPROVER: _APPROVE,
    # Admins run the product (queues, policies, users) and see the same metadata as a viewer, but
    # not bodies: managing a queue never needs its messages' personal data. An admin who must read
    # bodies gives themselves the operator role too, which the user admin records.
    # Admins also run lake queries (by metadata) and may stop anyone's.
    ADMIN: (
        *_VIEW,
        *_everything_on("queues", "queue"),
        *_everything_on("auth", "user"),
        RUN_QUERIES,
        "lakequery.change_lakequery",
    ),
    # The audit trail, and the requests it speaks of (what was decided, on which frozen set, by
    # whom); no message screens.
    AUDITOR: ("audit.view_auditentry", "audit.export_auditentry", "decisions.view_actionrequest"),
}


class RoleError(LookupError):
    """A permission named in ROLE_PERMISSIONS does not exist (a typo, or a missing migration)."""


def _permissions(names):
    wanted = set()
    for name in names:
        app_label, _, codename = name.partition(".")
        wanted.add((app_label, codename))
    found = {
        (p.content_type.app_label, p.codename): p
        for p in Permission.objects.select_related("content_type").filter(
            codename__in=[codename for _, codename in wanted]
        )
        if (p.content_type.app_label, p.codename) in wanted
    }
    missing = wanted - set(found)
    if missing:
        names = ", ".join(sorted(f"{a}.{c}" for a, c in missing))
        raise RoleError(f"unknown permission(s): {names}; has every migration run?")
    return list(found.values())


def roles_seed():
    """Create the role groups and give each exactly the permissions of ROLE_PERMISSIONS.

    Idempotent: running it again changes nothing, and a permission removed from the mapping is
    taken away from the group. Returns {role: (created, number of permissions)}.
    """
    result = {}
    with transaction.atomic():
        for role in ROLES:
            group, created = Group.objects.get_or_create(name=role)
            permissions = _permissions(ROLE_PERMISSIONS[role])
            group.permissions.set(permissions)
            result[role] = (created, len(permissions))
    return result
