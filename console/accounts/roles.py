"""The six roles, as Django groups, and the permissions each one holds.

ROLE_PERMISSIONS is the one place that says who may do what: later issues add their permissions
here and `manage.py seed_roles` applies the mapping. Permissions are named as `has_perm` names
them: "<app_label>.<codename>".
"""

from django.contrib.auth.models import Group, Permission
from django.db import transaction

from console.access.service_accounts import SERVICE_ROLE
from console.permissions import (
    APPROVE_REQUESTS,
    APPROVE_RULES,
    CANCEL_ANY_QUERY,
    CHECKPOINT_AUDIT,
    EXPORT_AUDIT,
    INGEST_MESSAGES,
    INVESTIGATE,
    MAKE_REQUESTS,
    MANAGE_ALERTS,
    PROPOSE_RULES,
    REASSIGN_INVESTIGATIONS,
    REMOVE_POISON,
    REPORT_POISON,
    RUN_PURGES,
    RUN_QUERIES,
    VIEW_AUDIT,
    VIEW_BODY,
    VIEW_GROUPS,
    VIEW_MESSAGES,
    VIEW_NOTES,
    VIEW_POISON_LIST,
    VIEW_PURGES,
    VIEW_QUERIES,
    VIEW_QUEUES,
    VIEW_REQUESTS,
    VIEW_RULES,
    VIEW_RUNS,
    VIEW_STATS,
    WRITE_NOTES,
)

VIEWER = "viewer"
OPERATOR = "operator"
APPROVER = "approver"
ADMIN = "admin"
AUDITOR = "auditor"
# A service account's role, and only a service account's (console.access.service_accounts).
APPLICATION = SERVICE_ROLE

ROLES = (VIEWER, OPERATOR, APPROVER, ADMIN, AUDITOR, APPLICATION)

# Read metadata: the read models, queues and the delivery bookkeeping. Not bodies. (The names the
# code checks are console.permissions'; the others are for the Django admin.)
_VIEW = (
    VIEW_QUEUES,
    "delivery.view_deliveryrun",
    VIEW_POISON_LIST,
    "ingest.view_messagekey",
    VIEW_MESSAGES,
    VIEW_GROUPS,
    VIEW_STATS,
    "readmodels.view_quarantineinflow",
    VIEW_REQUESTS,
    VIEW_QUERIES,
    # Notes on messages and groups, and who is investigating them.
    VIEW_NOTES,
    # The standing rules, and what each did.
    VIEW_RULES,
)
# Bodies can hold personal data: reading them is its own permission, given to those who decide
# what to do with a message (operators and approvers), not to everyone who can see metadata.
# Running a lake query is by metadata; searching bodies needs VIEW_BODY as well.
# Those who decide also write notes and take investigations (console.notes); approvers, who lead,
# may besides hand over or release a colleague's.
# They do not send messages in (R19): one who fails a message and sends an edited copy in walks
# around R17. A person sends by hand only into a queue two administrators agreed to
# (console.access.IngestRight); applications send through their service accounts.
_OPERATE = (
    *_VIEW,
    VIEW_BODY,
    MAKE_REQUESTS,
    RUN_QUERIES,
    WRITE_NOTES,
    INVESTIGATE,
)
# Approving is for someone other than the requester (four eyes); the services check that too.
# Standing rules are decisions that stand: approvers, who lead the decisions, and administrators,
# who run the queues they act on, propose them, and one of them other than the proposer approves.
_RULES = (PROPOSE_RULES, APPROVE_RULES)
_APPROVE = (*_OPERATE, APPROVE_REQUESTS, REASSIGN_INVESTIGATIONS, *_RULES)


def _everything_on(app_label, model):
    return tuple(f"{app_label}.{verb}_{model}" for verb in ("view", "add", "change", "delete"))


ROLE_PERMISSIONS = {
    VIEWER: _VIEW,
    OPERATOR: _OPERATE,
    APPROVER: _APPROVE,
    # Admins run the product (queues, policies, users) and see the same metadata as a viewer, but
    # not bodies: managing a queue never needs its messages' personal data. An admin who must read
    # bodies gives themselves the operator role too, which the user admin records.
    # Admins also run lake queries (by metadata) and may stop anyone's, take an entry off the
    # poison list, and run purges (R15). They see every background run, to tell work that is
    # stuck from work that is slow.
    ADMIN: (
        *_VIEW,
        *_everything_on("queues", "queue"),
        *_everything_on("auth", "user"),
        RUN_QUERIES,
        CANCEL_ANY_QUERY,
        REMOVE_POISON,
        VIEW_PURGES,
        RUN_PURGES,
        MANAGE_ALERTS,
        VIEW_RUNS,
        *_RULES,
    ),
    # An application outside the product: a producer that sends its messages in (POST
    # /api/v1/messages, into every queue), and a consumer that shares the poison list (R9, the
    # AMPS pattern): it reads the list and reports what it failed on. Nothing else: it sees no
    # messages, bodies or requests, not even those it sent. Held by service accounts only, which
    # hold nothing else and never sign in: they call with a token an administrator makes on the
    # "Service tokens" page (or manage.py token_create). Existing installs got the sending with
    # migration accounts 0004, which re-runs this seed; operators and approvers lost it with
    # accounts 0006.
    APPLICATION: (INGEST_MESSAGES, VIEW_POISON_LIST, REPORT_POISON),
    # The audit trail, and the requests and purges it speaks of (what was decided, on which
    # frozen set, by whom; what was purged); no message screens. The notes and investigations
    # too (through the API): what people found and who looked into what. They may take a
    # checkpoint of the chain when they want one on file now rather than at the next scheduled one.
    # And the standing rules, with what each did.
    AUDITOR: (
        VIEW_AUDIT,
        EXPORT_AUDIT,
        CHECKPOINT_AUDIT,
        VIEW_REQUESTS,
        VIEW_PURGES,
        VIEW_NOTES,
        VIEW_RULES,
    ),
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
