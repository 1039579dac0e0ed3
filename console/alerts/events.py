"""The events that raise alerts, who may hear of each, and who hears of it unless they say
otherwise (each role's defaults)."""

from console.accounts import roles
from console.permissions import (
    APPROVE_REQUESTS,
    MANAGE_USERS,
    VIEW_AUDIT,
    VIEW_GROUPS,
    VIEW_QUEUES,
    VIEW_REQUESTS,
)

QUEUE_DISABLED = "queue.disabled"
QUEUE_ENABLED = "queue.enabled"
QUEUE_INFLOW = "queue.inflow"
GROUP_NEW = "group.new"
# A resolved failure group failed again after it was resolved: the fix did not hold.
GROUP_REOPENED = "group.reopened"
SOURCE_DOWN = "source.down"
REQUEST_WAITING = "request.waiting"
REQUEST_APPROVED = "request.approved"
REQUEST_REJECTED = "request.rejected"
REQUEST_FINISHED = "request.finished"
REQUEST_STOPPED = "request.stopped"
AUDIT_BROKEN = "audit.broken"
COUNTS_DRIFT = "counts.drift"
ROLE_GRANT_WAITING = "role_grant.waiting"
# Break-glass (R17): a request executed by one person alone, and its review overdue.
REQUEST_BREAK_GLASS = "request.break_glass"
REQUEST_REVIEW_OVERDUE = "request.review_overdue"
REQUEST_BREAK_GLASS_REVIEWED = "request.break_glass_reviewed"

LABELS = {
    QUEUE_DISABLED: "A queue was disabled",
    QUEUE_ENABLED: "A queue was enabled again",
    QUEUE_INFLOW: "A queue quarantines more than its threshold",
    GROUP_NEW: "A new failure group",
    GROUP_REOPENED: "A resolved failure group failed again",
    SOURCE_DOWN: "A broker source is down",
    REQUEST_WAITING: "A request waits for my approval",
    REQUEST_APPROVED: "My request was approved",
    REQUEST_REJECTED: "My request was rejected",
    REQUEST_FINISHED: "My request finished",
    REQUEST_STOPPED: "My request was stopped at a redrive step",
    AUDIT_BROKEN: "The audit trail is not intact",
    COUNTS_DRIFT: "The console's counts differ from the lake",
    ROLE_GRANT_WAITING: "A role grant waits for my confirmation",
    REQUEST_BREAK_GLASS: "Someone executed a request alone (break-glass)",
    REQUEST_REVIEW_OVERDUE: "A break-glass decision's review is overdue",
    REQUEST_BREAK_GLASS_REVIEWED: "A break-glass decision was reviewed",
}
KINDS = tuple(LABELS)

# Events about one person's own request reach that person alone; the others reach everyone
# subscribed who may see what they speak of.
REQUESTER_KINDS = (REQUEST_APPROVED, REQUEST_REJECTED, REQUEST_FINISHED, REQUEST_STOPPED)
# What one must hold to hear of an event (besides being its requester, for REQUESTER_KINDS).
PERMISSION = {
    QUEUE_DISABLED: VIEW_QUEUES,
    QUEUE_ENABLED: VIEW_QUEUES,
    QUEUE_INFLOW: VIEW_QUEUES,
    GROUP_NEW: VIEW_GROUPS,
    GROUP_REOPENED: VIEW_GROUPS,
    SOURCE_DOWN: VIEW_QUEUES,
    REQUEST_WAITING: APPROVE_REQUESTS,
    AUDIT_BROKEN: VIEW_AUDIT,
    COUNTS_DRIFT: VIEW_QUEUES,
    ROLE_GRANT_WAITING: MANAGE_USERS,
    # Approvers and administrators hear of these by default; anyone who sees requests may.
    REQUEST_BREAK_GLASS: VIEW_REQUESTS,
    REQUEST_REVIEW_OVERDUE: VIEW_REQUESTS,
    REQUEST_BREAK_GLASS_REVIEWED: VIEW_REQUESTS,
}
# Events about a queue, which a subscription or a webhook may narrow to some queues.
QUEUE_KINDS = (QUEUE_DISABLED, QUEUE_ENABLED, QUEUE_INFLOW, GROUP_NEW, GROUP_REOPENED, SOURCE_DOWN)

_RUNNING = (QUEUE_DISABLED, QUEUE_INFLOW, GROUP_NEW, GROUP_REOPENED)
_BREAK_GLASS = (REQUEST_BREAK_GLASS, REQUEST_REVIEW_OVERDUE)
# Each role's defaults: the events its members hear of in the console without subscribing.
ROLE_DEFAULTS = {
    roles.VIEWER: (QUEUE_DISABLED,),
    roles.OPERATOR: _RUNNING,
    roles.APPROVER: (*_RUNNING, REQUEST_WAITING, *_BREAK_GLASS),
    roles.ADMIN: (
        *_RUNNING,
        QUEUE_ENABLED,
        SOURCE_DOWN,
        COUNTS_DRIFT,
        ROLE_GRANT_WAITING,
        *_BREAK_GLASS,
    ),
    roles.AUDITOR: (AUDIT_BROKEN,),
    roles.APPLICATION: (),
}
# A person's own request is theirs to hear of, whatever their role.
DEFAULT_FOR_EVERYONE = REQUESTER_KINDS
# The events that also go by email by default (to those with an address): the ones someone
# should act on soon.
DEFAULT_EMAIL = (
    QUEUE_DISABLED,
    SOURCE_DOWN,
    REQUEST_WAITING,
    REQUEST_STOPPED,
    AUDIT_BROKEN,
    ROLE_GRANT_WAITING,
    *_BREAK_GLASS,
)


# How bad each event is, for the targets that say so (PagerDuty's severity, a chat card's colour).
CRITICAL, ERROR, WARNING, INFO = "critical", "error", "warning", "info"
SEVERITY = {
    QUEUE_DISABLED: CRITICAL,
    SOURCE_DOWN: CRITICAL,
    AUDIT_BROKEN: CRITICAL,
    QUEUE_INFLOW: ERROR,
    REQUEST_STOPPED: ERROR,
    REQUEST_REVIEW_OVERDUE: ERROR,
    GROUP_NEW: WARNING,
    GROUP_REOPENED: WARNING,
    COUNTS_DRIFT: WARNING,
    REQUEST_BREAK_GLASS: WARNING,
    REQUEST_WAITING: INFO,
    ROLE_GRANT_WAITING: INFO,
    QUEUE_ENABLED: INFO,
    REQUEST_APPROVED: INFO,
    REQUEST_REJECTED: INFO,
    REQUEST_FINISHED: INFO,
    REQUEST_BREAK_GLASS_REVIEWED: INFO,
}

# Incidents, for the targets that open and close them (PagerDuty): each event opens (triggers)
# or closes (resolves) the incident named by its first item and by what the alert is about (its
# queue, or the detail its third item names; None: there is one such incident). A queue
# re-enabled closes the incident its disabling opened; a request decided, the one of its wait.
TRIGGER, RESOLVE = "trigger", "resolve"
INCIDENT = {
    QUEUE_DISABLED: ("queue-disabled", TRIGGER, "queue"),
    QUEUE_ENABLED: ("queue-disabled", RESOLVE, "queue"),
    QUEUE_INFLOW: ("queue-inflow", TRIGGER, "queue"),
    GROUP_NEW: ("failure-group", TRIGGER, "fingerprint"),
    GROUP_REOPENED: ("failure-group", TRIGGER, "fingerprint"),
    SOURCE_DOWN: ("source-down", TRIGGER, "source"),
    REQUEST_WAITING: ("request-waiting", TRIGGER, "request"),
    REQUEST_APPROVED: ("request-waiting", RESOLVE, "request"),
    REQUEST_REJECTED: ("request-waiting", RESOLVE, "request"),
    REQUEST_FINISHED: ("request-waiting", RESOLVE, "request"),
    REQUEST_STOPPED: ("request-stopped", TRIGGER, "request"),
    AUDIT_BROKEN: ("audit-broken", TRIGGER, None),
    COUNTS_DRIFT: ("counts-drift", TRIGGER, None),
    ROLE_GRANT_WAITING: ("role-grant-waiting", TRIGGER, "grant"),
    REQUEST_BREAK_GLASS: ("break-glass", TRIGGER, "request"),
    REQUEST_REVIEW_OVERDUE: ("break-glass", TRIGGER, "request"),
    REQUEST_BREAK_GLASS_REVIEWED: ("break-glass", RESOLVE, "request"),
}


def closes(kind):
    """The events whose incident `kind` closes (none if it opens one)."""
    name, action, _ = INCIDENT[kind]
    if action != RESOLVE:
        return ()
    return tuple(k for k, (n, a, _) in INCIDENT.items() if n == name and a == TRIGGER)


def opposite(kind):
    """The events of `kind`'s incident that act the other way: those it closes, or those that
    close what it opens."""
    name, action, _ = INCIDENT[kind]
    return tuple(k for k, (n, a, _) in INCIDENT.items() if n == name and a != action)


def role_default(role_names, kind):
    """Whether someone with these roles hears of `kind` by default."""
    return kind in DEFAULT_FOR_EVERYONE or any(
        kind in ROLE_DEFAULTS.get(role, ()) for role in role_names
    )
