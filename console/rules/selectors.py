"""Reads of standing rules: the lists, one rule, what it did, and its audit entries."""

from console.audit.models import AuditEntry
from console.rules.models import RuleApplication, StandingRule

APPLICATIONS_SHOWN = 100


def rules_list(*, status=None, kind=None):
    """Rules, newest first, of a status and a kind when given."""
    rules = StandingRule.objects.select_related("proposed_by", "decided_by", "ended_by")
    if status:
        rules = rules.filter(status=status)
    if kind:
        rules = rules.filter(kind=kind)
    return rules


def rule_get(*, rule_id):
    """The rule, or None for an id that is unknown or not a number."""
    try:
        number = int(rule_id)
    except (TypeError, ValueError):
        return None
    if not 0 < number < 2**63:
        return None
    return rules_list().filter(id=number).first()


def rule_applications(*, rule, limit=APPLICATIONS_SHOWN):
    """Its applications, newest first, with their requests."""
    return list(
        RuleApplication.objects.filter(rule=rule).select_related("request").order_by("-id")[:limit]
    )


def rule_audit(*, rule):
    """Its audit entries, oldest first."""
    return list(AuditEntry.objects.filter(target_type="rule", target_id=str(rule.id)))
