"""Who must approve (R17): the one policy every route that creates a request goes through
(screens, API, one click, selections, quick actions, retries of what failed again).

A second person approves a decision over APPROVAL_OVER messages, and, whatever its count, one
that edits a body or headers (one message's, or many bodies with a JSON Patch), moves messages
to another queue, sends them elsewhere than their origin (a redrive target of its own) or ends
conversations: those change what a sender or another application sees, and one person alone
could otherwise do them message by message. Plain reprocess or fail of a few messages needs no
one else, but each person has a budget: past APPROVAL_BUDGET unapproved messages in a rolling
hour, their requests wait too."""

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Sum
from django.utils import timezone

from console.decisions.models import ActionRequest as R
from console.decisions.targets import redrive_target_said
from console.plurals import counted

BUDGET_WINDOW = timedelta(hours=1)


@dataclass(frozen=True)
class Approval:
    needed: bool
    reason: str  # why, in words the requester and the approver read; "" when not needed


def _moves(target_queue, queues):
    """The queues a reprocess to target_queue takes messages out of (none when it stays)."""
    return sorted(q for q in queues if target_queue and q != target_queue)


def _what_it_does(action, count, queues):
    """The reasons that hold whatever the count, in words."""
    if action.kind == R.END:
        return "it ends conversations with an error (their senders are told)"
    if action.patch is not None:
        return "it edits the messages' bodies (a JSON Patch)"
    if action.edited_body is not None and action.edited_headers is not None:
        return "it edits a message's body and headers"
    if action.edited_body is not None:
        return "it edits a message's body"
    if action.edited_headers is not None:
        return "it edits a message's headers"
    moved = _moves(action.target_queue, queues)
    if moved:
        return (
            f"it moves messages to another queue, {action.target_queue} (out of {', '.join(moved)})"
        )
    if action.redrive_target:
        # Like another queue: the messages reach a consumer other than the one they came from.
        return (
            "it sends messages elsewhere than their origin, to "
            f"{redrive_target_said(action.redrive_target)}"
        )
    return ""


def budget_used(actor, now=None):
    """Messages of the actor's own requests that ran without approval in the last hour."""
    since = (now or timezone.now()) - BUDGET_WINDOW
    used = R.objects.filter(requester=actor, needs_approval=False, created_at__gte=since).aggregate(
        n=Sum("count")
    )["n"]
    return used or 0


def approval_budget(actor, now=None):
    """What the request form tells a person of their budget: over, limit, used, left."""
    used = budget_used(actor, now)
    limit = settings.APPROVAL_BUDGET
    return {
        "over": settings.APPROVAL_OVER,
        "limit": limit,
        "used": used,
        "left": max(0, limit - used),
    }


def approval_policy(*, actor, action, count, queues=(), more=False, now=None):
    """Whether a second person must approve a request of `action` on `count` messages (of
    `queues`, their names), and why. `more`: the count is a lower bound (a preview that
    stopped counting). The budget is read, not taken: the caller decides and records the
    request in one transaction with the requester's row locked (approval_policy_locked)."""
    does = _what_it_does(action, count, queues)
    if does:
        return Approval(True, does[0].upper() + does[1:] + ": a second person must approve it.")
    if more or count > settings.APPROVAL_OVER:
        shown = f"over {count:,} messages" if more else counted(count, "message")
        alone = counted(settings.APPROVAL_OVER, "message")
        return Approval(
            True,
            f"It covers {shown}, more than the {alone} one person may decide alone: a second "
            "person must approve it.",
        )
    used = budget_used(actor, now)
    if used + count > settings.APPROVAL_BUDGET:
        return Approval(
            True,
            f"You have decided {counted(used, 'message')} without approval in the last hour; "
            f"past {counted(settings.APPROVAL_BUDGET, 'message')} an hour your requests wait "
            "for a second person's approval.",
        )
    return Approval(False, "")


def approval_policy_locked(*, actor, action, count, queues=()):
    """approval_policy inside the caller's transaction, with the requester's row locked so that
    two requests of one person at once cannot both spend the last of the budget (SQLite's
    immediate transactions already run one at a time)."""
    get_user_model().objects.select_for_update().filter(pk=actor.pk).first()
    return approval_policy(actor=actor, action=action, count=count, queues=queues)
