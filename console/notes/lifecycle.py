"""A failure group's lifecycle: open, acknowledged (with its owner), resolved (a fix is out),
ignored (muted), and open again, by a person's hand or because a failure of a resolved group's
pattern came after it was resolved (a reopen, told by an alert).

Each move is one transaction: the status, its change (for how long each state lasted) and its
audit entry. Moving a group needs INVESTIGATE, checked here as on the screens and the API. A
reopen is the refresh's: it runs inside the transaction that loads the groups' new failures
(console.notes.receivers)."""

from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from console.audit.services import audit_record
from console.moments import span_text
from console.notes.models import (
    ACKNOWLEDGED,
    COMMENT_MAX,
    GROUP,
    GROUP_STATES,
    IGNORED,
    OPEN,
    RESOLVED,
    GroupStatus,
    GroupStatusChange,
)
from console.permissions import INVESTIGATE, needs_text
from console.readmodels.models import FailureGroup
from console.rows import from_row

STATE_NAMES = dict(GROUP_STATES)
# The audit action of a move to each state.
ACTIONS = {
    ACKNOWLEDGED: "group.acknowledged",
    RESOLVED: "group.resolved",
    IGNORED: "group.ignored",
    OPEN: "group.reopened",
}
# The buttons each state offers, in the order shown: (state to move to, the button's words).
MOVES = {
    OPEN: ((ACKNOWLEDGED, "Acknowledge"), (RESOLVED, "Resolve"), (IGNORED, "Mute")),
    ACKNOWLEDGED: ((RESOLVED, "Resolve"), (IGNORED, "Mute"), (OPEN, "Open again")),
    RESOLVED: ((OPEN, "Open again"), (IGNORED, "Mute")),
    IGNORED: ((OPEN, "Unmute"),),
}
# Who reopens a resolved group when a new failure comes: the refresh that brought it.
REFRESH = "refresh"


@dataclass(frozen=True)
class Status:
    """A group's status as screens and the API show it; `open` with no `since` when no one has
    ever moved it."""

    fingerprint: str
    state: str = OPEN
    since: datetime | None = None
    owner: str = ""
    changed_by: str = ""
    comment: str = ""
    reopened: bool = False

    @property
    def name(self):
        return STATE_NAMES[self.state]

    @property
    def muted(self):
        return self.state == IGNORED

    @property
    def moves(self):
        return MOVES[self.state]


def _status(row, fingerprint):
    if row is None:
        return Status(fingerprint=fingerprint)
    return from_row(Status, row, owner=row.owner_name)


def failure_group(*, fingerprint):
    return FailureGroup.objects.filter(pk=fingerprint).first()


def group_status(*, fingerprint):
    return _status(GroupStatus.objects.filter(pk=fingerprint).first(), fingerprint)


def group_statuses(*, fingerprints):
    """{fingerprint: Status} of each of `fingerprints`, in one query."""
    rows = {s.fingerprint: s for s in GroupStatus.objects.filter(pk__in=list(fingerprints))}
    return {f: _status(rows.get(f), f) for f in fingerprints}


def statuses_attach(groups):
    """Set `.status` (a Status) on each failure group of a list, in one query."""
    groups = list(groups)
    found = group_statuses(fingerprints=[g.fingerprint for g in groups])
    for group in groups:
        group.status = found[group.fingerprint]
    return groups


def muted_fingerprints():
    """The groups people have muted (a subquery: a few rows)."""
    return GroupStatus.objects.filter(state=IGNORED).values("fingerprint")


def fingerprints_in(state):
    """The groups in `state` (a subquery); for OPEN, those moved back to open (the rest of the
    open ones have no row: filter them with `fingerprints_moved`)."""
    return GroupStatus.objects.filter(state=state).values("fingerprint")


def fingerprints_moved():
    return GroupStatus.objects.values("fingerprint")


@dataclass(frozen=True)
class Period:
    """How long a group stood in one state: `until` None while it still does."""

    state: str
    since: datetime | None
    until: datetime | None
    changed_by: str
    comment: str
    reopened: bool

    @property
    def name(self):
        return STATE_NAMES[self.state]

    @property
    def lasted(self):
        if self.since is None:
            return None
        return (self.until or timezone.now()) - self.since

    @property
    def lasted_text(self):
        return span_text(self.lasted)


def group_lifecycle(*, fingerprint, first_seen=None):
    """The group's states, oldest first, each with how long it lasted: open from its first
    failure (`first_seen`, when known) to the first move, then one period per move."""
    changes = list(GroupStatusChange.objects.filter(fingerprint=fingerprint).order_by("at", "id"))
    periods = []
    start, state = first_seen, OPEN
    by, comment, reopened = "", "", False
    for change in changes:
        periods.append(Period(state, start, change.at, by, comment, reopened))
        start, state = change.at, change.to_state
        by, comment, reopened = change.changed_by, change.comment, change.reopened
    periods.append(Period(state, start, None, by, comment, reopened))
    return periods


def _comment_clean(comment):
    comment = (comment or "").strip()
    if len(comment) > COMMENT_MAX:
        raise ValidationError(f"a comment holds at most {COMMENT_MAX:,} characters")
    if "\x00" in comment:
        raise ValidationError("a comment cannot hold a NUL character")
    return comment


def _move(row, fingerprint, *, to, by, owner=None, comment="", reopened=False):
    """Write the move (the row locked, or None for a group never moved) and its change."""
    now = timezone.now()
    before = row.state if row is not None else OPEN
    # The move's own fields (GroupMove), on the status and on its change alike.
    move = dict(changed_by=by, comment=comment, reopened=reopened)
    owner_name = owner.get_username() if owner is not None else ""
    GroupStatus.objects.update_or_create(
        fingerprint=fingerprint,
        defaults=dict(state=to, since=now, owner=owner, owner_name=owner_name, **move),
    )
    GroupStatusChange.objects.create(
        fingerprint=fingerprint, from_state=before, to_state=to, at=now, **move
    )
    return before


def group_status_set(*, actor, fingerprint, state, comment=""):
    """Move a group to `state` by a person's hand: acknowledging makes `actor` its owner."""
    if not actor.has_perm(INVESTIGATE):
        raise PermissionDenied(needs_text((INVESTIGATE,), user=actor))
    if state not in STATE_NAMES:
        raise ValidationError(
            f"a group's state is one of {', '.join(STATE_NAMES)}; {state!r} is not"
        )
    comment = _comment_clean(comment)
    with transaction.atomic():
        if not FailureGroup.objects.filter(pk=fingerprint).exists():
            raise ValidationError("no such failure group")
        row = GroupStatus.objects.select_for_update().filter(pk=fingerprint).first()
        current = row.state if row is not None else OPEN
        if current == state:
            raise ValidationError(f"the group is {STATE_NAMES[state]} already")
        owner = actor if state == ACKNOWLEDGED else None
        before = _move(
            row, fingerprint, to=state, by=actor.get_username(), owner=owner, comment=comment
        )
        audit_record(
            actor=actor,
            action=ACTIONS[state],
            target_type=GROUP,
            target_id=fingerprint,
            details={"from": before, "to": state, "comment": comment},
        )
    return group_status(fingerprint=fingerprint)


def groups_reopen_recurring():
    """Reopen every resolved group that failed again after it was resolved: its latest failure
    (FailureGroup.last_seen, as the refresh just loaded it) is later than the resolve. Returns
    the fingerprints reopened."""
    resolved = GroupStatus.objects.select_for_update().filter(state=RESOLVED)
    by_fingerprint = {row.fingerprint: row for row in resolved}
    if not by_fingerprint:
        return []
    reopened = []
    latest = FailureGroup.objects.filter(pk__in=list(by_fingerprint)).values_list(
        "fingerprint", "last_seen", "count"
    )
    for fingerprint, last_seen, count in latest:
        row = by_fingerprint[fingerprint]
        if last_seen is None or last_seen <= row.since:
            continue
        _move(row, fingerprint, to=OPEN, by=REFRESH, reopened=True)
        audit_record(
            actor=REFRESH,
            action=ACTIONS[OPEN],
            target_type=GROUP,
            target_id=fingerprint,
            details={
                "from": RESOLVED,
                "to": OPEN,
                "resolved_at": row.since.isoformat(),
                "failed_at": last_seen.isoformat(),
                "count": count,
            },
        )
        reopened.append(fingerprint)
    return reopened
