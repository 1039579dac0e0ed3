"""The permissions the console's screens, API and services check, by name ("<app_label>.<codename>",
as `has_perm` takes them), and how a screen or an endpoint asks for them.
console.accounts.roles says which role holds which."""

from django.contrib.auth.decorators import permission_required
from rest_framework.permissions import BasePermission

# The read models and the queues.
VIEW_MESSAGES = "readmodels.view_messageindex"
# Bodies can hold personal data: reading them is a permission of its own.
VIEW_BODY = "readmodels.view_body"
VIEW_GROUPS = "readmodels.view_failuregroup"
VIEW_STATS = "readmodels.view_queuestat"
VIEW_QUEUES = "queues.view_queue"
CHANGE_QUEUE = "queues.change_queue"

# Adding a message key is what accepting a message does.
INGEST_MESSAGES = "ingest.add_messagekey"

# Action requests: asking for one, and approving someone else's (the services check it again).
VIEW_REQUESTS = "decisions.view_actionrequest"
MAKE_REQUESTS = "decisions.add_actionrequest"
APPROVE_REQUESTS = "decisions.approve_actionrequest"

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

# Users and their roles (administrators). Granting a role that approves, or that grants roles,
# takes a second administrator (console.access).
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


def perms_required(*perms):
    """A screen's decorator, under @login_required: a signed-in user without every one of
    `perms` gets a 403 (an anonymous one was sent to the login page already)."""
    return permission_required(perms, raise_exception=True)


def has_perms(*perms):
    """A DRF permission class granting a signed-in user who holds every one of `perms`.

    An anonymous caller is refused too, and DRF answers 401 for it (the token authenticator's
    challenge), 403 for a signed-in user without the permissions.
    """

    class HasPerms(BasePermission):
        message = f"this needs the permission(s) {', '.join(perms)}"

        def has_permission(self, request, view):
            user = request.user
            return bool(user and user.is_authenticated and user.has_perms(perms))

    HasPerms.__name__ = f"HasPerms({', '.join(perms)})"
    return HasPerms
