"""Fixtures for notes and investigations: the browse tests' index (real lake bodies for the
detail pages, index rows by hand) with two failure groups, and the personas."""

import pytest

from console.audit.models import AuditEntry
from tests.browse.conftest import Index, api, login  # noqa: F401 - the notes tests' clients


@pytest.fixture
def world(db, lake_root, personas):
    """Group g1 (order-1 with a real body, order-2, order-3), group g2 (order-4), and order-5 in
    no group."""
    index = Index()
    index.group("g1")
    index.group("g2", pattern="ledger did not answer within <n> ms")
    index.message("order-1", '{"order": 1}', group_id="g1")
    index.row("order-2", group_id="g1")
    index.row("order-3", group_id="g1")
    index.row("order-4", group_id="g2")
    index.row("order-5")
    index.stats("orders", NDLV=5)
    return index


def trail(*, action_prefix=""):
    """[(actor, action, target_type, target_id, details)] of the audit trail, oldest first."""
    return [
        (e.actor, e.action, e.target_type, e.target_id, e.details)
        for e in AuditEntry.objects.filter(action__startswith=action_prefix).order_by("seq")
    ]
