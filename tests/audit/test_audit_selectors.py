"""Reading the trail back for the audit screen: filters, keyset pages newest first, and the
chain's status from its latest checkpoint."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from console.audit.models import AuditEntry
from console.audit.selectors import audit_chain_status, audit_page, audit_queryset
from console.audit.services import audit_checkpoint
from tests.audit.conftest import T0

pytestmark = pytest.mark.django_db


def _seqs(page):
    return [e.seq for e in page.rows]


@pytest.fixture
def mixed(record):
    record("login", actor="alice")
    record("request.created", actor="bob", target_type="request", target_id="1")
    record("request.approved", actor="Alice-Admin", target_type="request", target_id="1")
    record("requests.other", actor="carol")
    record("queue.enabled", actor="cli:ops", target_type="queue", target_id="orders")
    record("request.created", actor="bob", target_type="request", target_id="2")


def _matching(**filters):
    return sorted(audit_queryset(filters=filters).values_list("seq", flat=True))


def test_an_actor_matches_exactly_or_by_a_part_in_any_case(mixed):
    assert _matching(actor="alice") == [1]
    assert _matching(actor_contains="ALICE") == [1, 3]


def test_an_action_matches_exactly_or_by_a_prefix_ending_in_a_dot_or_star(mixed):
    assert _matching(action="request.created") == [2, 6]
    assert _matching(action="request") == []
    assert _matching(action="request.") == [2, 3, 6]
    assert _matching(action="request.*") == [2, 3, 6]
    assert _matching(action="request*") == [2, 3, 4, 6]


def test_a_target_matches_by_type_and_id(mixed):
    assert _matching(target_type="request") == [2, 3, 6]
    assert _matching(target_type="request", target_id="1") == [2, 3]
    assert _matching(target_id="orders") == [5]


def test_a_time_range_includes_its_start_and_excludes_its_end(mixed):
    # Entries are one minute apart from T0.
    assert _matching(since=T0 + timedelta(minutes=2)) == [3, 4, 5, 6]
    assert _matching(until=T0 + timedelta(minutes=2)) == [1, 2]
    assert _matching(since=T0 + timedelta(minutes=1), until=T0 + timedelta(minutes=3)) == [2, 3]


def test_filters_combine(mixed):
    assert _matching(actor="bob", action="request.", target_id="2") == [6]


def test_pages_run_newest_first_without_gaps_or_repeats(record):
    for _ in range(7):
        record()

    first = audit_page(filters={}, size=3)
    assert _seqs(first) == [7, 6, 5]
    assert (first.prev_cursor, first.next_cursor) == (None, 5)

    second = audit_page(filters={}, after=first.next_cursor, size=3)
    assert _seqs(second) == [4, 3, 2]
    assert (second.prev_cursor, second.next_cursor) == (4, 2)

    last = audit_page(filters={}, after=second.next_cursor, size=3)
    assert _seqs(last) == [1]
    assert last.next_cursor is None

    back = audit_page(filters={}, before=second.prev_cursor, size=3)
    assert _seqs(back) == [7, 6, 5]
    assert (back.prev_cursor, back.next_cursor) == (None, 5)

    middle = audit_page(filters={}, before=last.prev_cursor, size=3)
    assert _seqs(middle) == [4, 3, 2]
    assert middle.prev_cursor == 4


def test_pages_keep_to_the_filter(mixed):
    first = audit_page(filters={"action": "request."}, size=2)
    assert _seqs(first) == [6, 3]
    second = audit_page(filters={"action": "request."}, after=first.next_cursor, size=2)
    assert _seqs(second) == [2]
    assert second.next_cursor is None


def test_an_empty_page_has_no_links(db):
    page = audit_page(filters={"actor": "nobody"})
    assert (page.rows, page.next_cursor, page.prev_cursor) == ([], None, None)


def test_a_page_neither_skips_with_offset_nor_counts(record):
    for _ in range(5):
        record()
    with CaptureQueriesContext(connection) as queries:
        audit_page(filters={"actor_contains": "ali"}, after=4, size=2)
    sql = " ".join(q["sql"].upper() for q in queries)
    assert len(queries) == 1
    assert "OFFSET" not in sql
    assert "COUNT(" not in sql


def test_the_chain_status_without_a_checkpoint(record):
    record()
    status = audit_chain_status()
    assert status.head.seq == 1
    assert (status.checkpoint, status.checkpoint_holds) == (None, None)


def test_the_chain_status_says_whether_the_latest_checkpoint_still_holds(record):
    for _ in range(3):
        record()
    audit_checkpoint()
    record()
    status = audit_chain_status()
    assert (status.head.seq, status.checkpoint.seq, status.checkpoint_holds) == (4, 3, True)

    AuditEntry.objects.filter(seq=3).update(hash="f" * 64)
    assert audit_chain_status().checkpoint_holds is False
