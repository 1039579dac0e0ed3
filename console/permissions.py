"""The permissions the console's screens, API and services check, by name ("<app_label>.<codename>",
as `has_perm` takes them), and how a screen or an endpoint asks for them.
console.accounts.roles says which role holds which."""

from django.contrib.auth.decorators import user_passes_test
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission

# The read models and the queues.
VIEW_MESSAGES = "readmodels.view_messageindex"
# Bodies can hold personal data: reading them is a permission of its own.
VIEW_BODY = "readmodels.view_body"
VIEW_GROUPS = "readmodels.view_failuregroup"
VIEW_STATS = "readmodels.view_queuestat"
VIEW_QUEUES = "queues.view_queue"
CHANGE_QUEUE = "queues.change_queue"

# Adding a message key is what accepting a message does. Held by the application role, whose
# service accounts send into every queue; a person sends by hand only into the queues of their
# rights to (console.access.IngestRight), whatever roles they hold (R19).
INGEST_MESSAGES = "ingest.add_messagekey"

# Action requests: asking for one, and approving someone else's (the services check it again).
VIEW_REQUESTS = "decisions.view_actionrequest"
MAKE_REQUESTS = "decisions.add_actionrequest"
APPROVE_REQUESTS = "decisions.approve_actionrequest"

# Standing rules (console.rules): seeing them, proposing one (and removing one), and approving
# or rejecting someone else's (four eyes, R17: a rule decides again and again, alone).
VIEW_RULES = "rules.view_standingrule"
PROPOSE_RULES = "rules.add_standingrule"
APPROVE_RULES = "rules.approve_standingrule"

# Lake queries: seeing one and its result, running one, and stopping anyone's (the requester may
# always stop their own). One that searches bodies needs VIEW_BODY as well (console.lakequery).
VIEW_QUERIES = "lakequery.view_lakequery"
RUN_QUERIES = "lakequery.add_lakequery"
CANCEL_ANY_QUERY = "lakequery.change_lakequery"

# The shared poison list (R9): reading it, reporting a failure to it (outside applications), and
# taking an entry off it (administrators).
VIEW_POISON_LIST = "delivery.view_poisonentry"
REPORT_POISON = "delivery.add_poisonentry"
REMOVE_POISON = "delivery.delete_poisonentry"
# Retention (R15): seeing purge records, and running a purge or a preview of one.
VIEW_PURGES = "retention.view_purgerun"
RUN_PURGES = "retention.add_purgerun"

# Notes on messages and failure groups, and who investigates them (console.notes): reading both,
# writing a note, taking an investigation (and handing over or releasing one's own), and handing
# over or releasing someone else's (for a colleague who is away).
VIEW_NOTES = "notes.view_note"
WRITE_NOTES = "notes.add_note"
INVESTIGATE = "notes.change_investigation"
REASSIGN_INVESTIGATIONS = "notes.reassign_investigation"

# Users and their roles (administrators). Giving a role that grows someone's rights, or the
# sending by hand into a queue, takes a second administrator (console.access, R19).
MANAGE_USERS = "auth.change_user"

# Alerts: the outbox, the webhooks and the inflow thresholds (administrators). Everyone signed in
# reads their own alerts and chooses what they hear of.
MANAGE_ALERTS = "alerts.change_webhook"

# Every background run (delivery runs, refreshes, compactions, purges), with its heartbeat and
# position: the runs page and /api/v1/runs (administrators). A custom permission of the lake app,
# the lowest that holds a run (console.lake.models.CompactionRun).
VIEW_RUNS = "lake.view_runs"

VIEW_AUDIT = "audit.view_auditentry"
EXPORT_AUDIT = "audit.export_auditentry"
# Taking a checkpoint of the chain's head now, from the audit page (the scheduler takes them too).
CHECKPOINT_AUDIT = "audit.add_auditcheckpoint"


# What each permission lets one do, in the words a refusal says it with ("this needs permission
# for sending messages"): callers read sentences, not codenames.
WORDS = {
    VIEW_MESSAGES: "seeing messages",
    VIEW_BODY: "reading message bodies",
    VIEW_GROUPS: "seeing failure groups",
    VIEW_STATS: "seeing the statistics",
    VIEW_QUEUES: "seeing queues",
    CHANGE_QUEUE: "changing queues",
    INGEST_MESSAGES: "sending messages",
    VIEW_REQUESTS: "seeing action requests",
    MAKE_REQUESTS: "requesting actions",
    APPROVE_REQUESTS: "approving action requests",
    VIEW_RULES: "seeing standing rules",
    PROPOSE_RULES: "proposing and removing standing rules",
    APPROVE_RULES: "approving standing rules",
    VIEW_QUERIES: "seeing lake queries",
    RUN_QUERIES: "running lake queries",
    CANCEL_ANY_QUERY: "stopping anyone's lake query",
    VIEW_POISON_LIST: "reading the poison list",
    REPORT_POISON: "reporting to the poison list",
    REMOVE_POISON: "taking entries off the poison list",
    VIEW_PURGES: "seeing purges",
    RUN_PURGES: "running purges",
    VIEW_NOTES: "reading notes and investigations",
    WRITE_NOTES: "writing notes",
    INVESTIGATE: "taking investigations",
    REASSIGN_INVESTIGATIONS: "handing over anyone's investigation",
    MANAGE_USERS: "managing users",
    MANAGE_ALERTS: "managing alerts",
    VIEW_RUNS: "seeing background runs",
    VIEW_AUDIT: "reading the audit trail",
    EXPORT_AUDIT: "exporting the audit trail",
    CHECKPOINT_AUDIT: "taking audit checkpoints",
    # Held by roles for the Django admin's lists, checked by no screen of the console's own.
    "delivery.view_deliveryrun": "seeing delivery runs",
    "ingest.view_messagekey": "seeing which messages were received",
    "readmodels.view_quarantineinflow": "seeing the flow in and out of quarantine",
    "queues.add_queue": "creating queues",
    "queues.delete_queue": "deleting queues",
    "auth.view_user": "seeing users",
    "auth.add_user": "creating users",
    "auth.delete_user": "deleting users",
}


def permission_words(name):
    """What the permission `name` ("<app_label>.<codename>") lets one do, in words; one that
    WORDS does not know (added in the Django admin) is said as "<codename> in <app_label>"
    rather than as a code (tests/accounts check that every role's permission is in WORDS)."""
    if name in WORDS:
        return WORDS[name]
    app_label, _, codename = name.partition(".")
    return f"{codename.replace('_', ' ')} in {app_label}"


def _roles_holding(perms):
    """The roles (groups) that hold every one of `perms` here, by name: what this install's
    roles hold (manage.py seed_roles), read when a refusal needs it."""
    groups = Group.objects.all()
    for perm in perms:
        app_label, _, codename = perm.partition(".")
        groups = groups.filter(
            permissions__content_type__app_label=app_label, permissions__codename=codename
        )
    return sorted(set(groups.values_list("name", flat=True)))


def _listed(items, last):
    """["a", "b", "c"] as "a, b <last> c"."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"


def needs_text(perms, *, user=None):
    """Why a caller without `perms` is refused, in words: "this needs permission for sending
    messages (the application, approver or operator role)". With `user`, only the permissions
    they lack are named."""
    missing = [p for p in perms if user is None or not user.has_perm(p)] or list(perms)
    what = _listed([permission_words(p) for p in missing], "and")
    roles = _roles_holding(missing)
    who = f"the {_listed(roles, 'or')} role" if roles else "no role holds it: ask an administrator"
    return f"this needs permission for {what} ({who})"


def perms_required(*perms):
    """A screen's decorator, under @login_required: a signed-in user without every one of
    `perms` gets a 403 that says which permission, and which roles hold it (an anonymous one
    was sent to the login page already)."""

    def check(user):
        if user.has_perms(perms):
            return True
        raise PermissionDenied(needs_text(perms, user=user))

    return user_passes_test(check)


def has_perms(*perms):
    """A DRF permission class granting a signed-in user who holds every one of `perms`.

    An anonymous caller is refused too, and DRF answers 401 for it (the token authenticator's
    challenge), 403 for a signed-in user without the permissions.
    """

    class HasPerms(BasePermission):
        _user = None

        @property
        def message(self):
            # Read by DRF on a refusal only: the roles are looked up then, not on every call;
            # and not for an anonymous caller, whose answer is a 401 that says how to sign in.
            if self._user is None:
                return "sign in first"
            return needs_text(perms, user=self._user)

        def has_permission(self, request, view):
            user = request.user
            self._user = user if user and user.is_authenticated else None
            return bool(self._user and user.has_perms(perms))

    HasPerms.__name__ = f"HasPerms({', '.join(perms)})"
    return HasPerms
