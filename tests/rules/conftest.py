"""Fixtures for the standing rules: rules proposed and approved through the services by the
personas (an administrator proposes, an approver approves), quarantined messages in the index
(rows by hand, for what reads only the index), and the decisions' desk (tests.decisions.desk:
real ingest, delivery runs on Spark, refreshes, requests executed) for what a rule's request
does to real messages."""

from datetime import timedelta

import pytest
from django.utils import timezone

from console.notes.models import GROUP, MESSAGE
from console.notes.services import investigation_take, note_add
from console.rules.models import StandingRule
from console.rules.services import rule_approve, rule_propose
from tests.browse.conftest import Index
from tests.decisions.desk import make_desk

# The fingerprint of the tests' failure group of index rows.
GROUP_ID = "g" * 64


class Rules:
    """Rules as the console makes them: proposed by one persona, approved by another."""

    def __init__(self, personas):
        self.personas = personas

    def propose(self, kind="archive", *, by="admin", name=None, comment="stale for good", **params):
        return rule_propose(
            actor=self.personas[by],
            name=name or f"{kind.replace('_', '-')}-rule",
            kind=kind,
            comment=comment,
            params=params,
        )

    def active(self, kind="archive", *, approver="approver", **kwargs):
        return rule_approve(actor=self.personas[approver], rule=self.propose(kind, **kwargs))


@pytest.fixture
def rules(personas):
    return Rules(personas)


class Quarantine(Index):
    """Quarantined messages in the index, each quarantined (its latest event) at a time given."""

    def __init__(self, personas):
        self.personas = personas
        self.now = timezone.now().replace(microsecond=0)

    def quarantined(self, message_id, *, days_ago=0, queue="orders", group=GROUP_ID, **fields):
        at = self.now - timedelta(days=days_ago)
        self.queue(queue)
        return self.row(
            message_id,
            queue=queue,
            group_id=group,
            updated_at=at,
            last_failure_at=at,
            **fields,
        )

    def investigate(self, target_id, *, kind=MESSAGE, by="operator"):
        investigation_take(actor=self.personas[by], kind=kind, target_id=target_id)

    def investigate_group(self, fingerprint=GROUP_ID, *, by="operator"):
        self.investigate(fingerprint, kind=GROUP, by=by)

    def note(self, message_id, *, by="operator"):
        note_add(actor=self.personas[by], kind=MESSAGE, target_id=message_id, text="looking")


@pytest.fixture
def quarantine(db, lake_root, personas):
    q = Quarantine(personas)
    q.queue("orders")
    q.queue("payments")
    q.group(GROUP_ID, queue="orders", exception_type="ConnectionError")
    return q


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


def rule_audit(rule):
    """The actions of a rule's audit entries, oldest first, with their actor."""
    from console.audit.models import AuditEntry

    return [
        (e.action, e.actor)
        for e in AuditEntry.objects.filter(target_type="rule", target_id=str(rule.id))
    ]


def reloaded(rule):
    return StandingRule.objects.get(pk=rule.pk)
