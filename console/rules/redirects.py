"""What the rules hand to console.decisions when Django starts (console.decisions.standing):
standing redirects applied to the requests people make, the rows of a rule's own scope, and what
a request's page says of the rule that made or redirected it.

A redirect applies to a reprocess back to the messages' own queue (no queue named) of messages of
its queue: the request goes to its other queue, as a second person approved with the rule. It
never acts on a message someone investigates: a request that holds one, or that holds messages
of other queues too, is refused in words, and the person names the queue to reprocess in (the
messages' own, to keep them there)."""

from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from console.decisions.scope import frozen_ids
from console.decisions.standing import Note, Redirect, provide
from console.notes.models import GROUP, MESSAGE, Investigation
from console.queues.models import Queue
from console.readmodels.models import MessageIndex
from console.rules.candidates import rule_rows
from console.rules.models import REDIRECT, RuleApplication, StandingRule
from console.rules.services import rule_audit, rule_authority_lapsed


def _active_redirects(queues):
    """{queue: rule} of the active redirects of `queues` that still stand: one whose proposer or
    approver lost the right is stopped by the next look (console.rules.applying)."""
    return {
        rule.queue: rule
        for rule in StandingRule.objects.filter(
            kind=REDIRECT, status=StandingRule.ACTIVE, queue__in=list(queues)
        ).select_related("proposed_by", "decided_by")
        if not rule_authority_lapsed(rule)
    }


def _investigated(breakdown, ids_path):
    """How many of a frozen set's messages someone investigates: those of its groups taken
    (their counts are in its breakdown) and those taken themselves (few: read against the set's
    ids), each once."""
    groups = {group: n for group, n in breakdown.get("groups", {}).items() if group}
    taken_groups = set(
        Investigation.objects.filter(kind=GROUP, target_id__in=list(groups)).values_list(
            "target_id", flat=True
        )
    )
    count = sum(groups[group] for group in taken_groups)
    taken = pa.array(
        Investigation.objects.filter(kind=MESSAGE).values_list("target_id", flat=True), pa.string()
    )
    if not len(taken):
        return count
    own = []
    for ids in frozen_ids(ids_path):
        batch = pa.array(ids, pa.string())
        own += batch.filter(pc.is_in(batch, value_set=taken)).to_pylist()
    if own:
        count += MessageIndex.objects.filter(pk__in=own).exclude(group_id__in=taken_groups).count()
    return count


def _recorder(rule):
    def record(request):
        RuleApplication.objects.create(
            rule=rule, request=request, at=timezone.now(), count=request.count
        )
        rule_audit(
            rule,
            "rule.applied",
            actor="system",
            details={
                "request": request.id,
                "count": request.count,
                "from": rule.queue,
                "to": rule.to_queue,
            },
        )

    return record


def redirect(breakdown, ids_path):
    """The Redirect of a reprocess back to its queue of the frozen set, or None; ValidationError
    when it cannot apply to the whole set (console.decisions.standing.provide)."""
    queues = breakdown.get("queues", {})
    rules = _active_redirects(queues)
    if not rules:
        return None
    said = "; ".join(
        f"{rule.said} sends every reprocess of {queue} to {rule.to_queue}"
        for queue, rule in sorted(rules.items())
    )
    if len(queues) > 1:
        raise ValidationError(
            f"{said}, and these messages are of {len(queues)} queues: reprocess the messages of "
            "each queue apart, or name the queue to reprocess in"
        )
    (rule,) = rules.values()
    if not Queue.objects.filter(name=rule.to_queue).exists():
        raise ValidationError(
            f"{said}, which is no longer a queue: name the queue to reprocess in, or remove the "
            "rule"
        )
    investigated = _investigated(breakdown, ids_path)
    if investigated:
        raise ValidationError(
            f"{said}, but never a message someone investigates, and {investigated} of these are: "
            f"name the queue to reprocess in ({rule.queue} keeps them there)"
        )
    return Redirect(to_queue=rule.to_queue, said=rule.said, record=_recorder(rule))


def redirects_said(queues):
    """[Note] of the redirects a reprocess of messages of `queues` would meet."""
    return [
        Note(
            text=(
                f"{rule.said} sends every reprocess of {queue}'s messages back to their queue to "
                f"{rule.to_queue} instead, unless you name the queue to reprocess in."
            ),
            url=reverse("rule-detail", args=[rule.id]),
        )
        for queue, rule in sorted(_active_redirects(queues).items())
    ]


def scope_rows(scope):
    """The rows of a rule's own scope {"kind": "standing_rule", "rule": id, "at": time}: what the
    rule matches at that time (console.rules.candidates), while it is active."""
    rule = StandingRule.objects.filter(id=scope.get("rule"), status=StandingRule.ACTIVE).first()
    if rule is None:
        raise ValidationError(f"standing rule {scope.get('rule')} is not active")
    return rule_rows(rule=rule, now=datetime.fromisoformat(scope["at"]))


def application_said(application):
    """What a request's page and its messages' history say of the rule that made or redirected
    it."""
    rule = application.rule
    if rule.kind == REDIRECT:
        return f"Sent to {rule.to_queue} rather than back to {rule.queue} by {rule.said}"
    return f"Made by {rule.said}"


def notes(request):
    return [
        Note(text=application_said(a), url=reverse("rule-detail", args=[a.rule_id]))
        for a in RuleApplication.objects.filter(request=request)
        .select_related("rule")
        .order_by("id")
    ]


provide(redirect=redirect, redirects_said=redirects_said, scope_rows=scope_rows, notes=notes)
