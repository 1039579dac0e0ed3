"""An edited body's lineage on the message page (R13: an edit is a new version, the original is
kept): each version, who edited it in which request and when, and a line diff against the
original, as inert text; a binary edit says it differs without a line diff. Real quarantine,
real reprocesses with edited bodies, read back from the lake."""

import pytest
from django.urls import reverse

from tests.browse.conftest import login
from tests.decisions.desk import make_desk

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ORIGINAL = "order 7\n<script>alert(1)</script>\ncustomer: none\nend"
FIRST_EDIT = "order 7\n<script>alert(1)</script>\ncustomer: ACME\nend"
BINARY_EDIT = b"\x00\xffnot text"


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


@pytest.fixture
def edited(desk):
    """One message quarantined (every failure quarantines: max_failed_deliveries 1), edited and
    reprocessed, failed again, then edited again with a binary body."""
    desk.queue("orders", max_failed_deliveries=1)
    (message_id,) = desk.quarantine("orders", [ORIGINAL])
    requests = []
    for body in (FIRST_EDIT.encode(), BINARY_EDIT):
        request = desk.execute(
            desk.request({"kind": "message", "id": message_id}, edited_body=body)
        )
        assert request.status == "done"
        requests.append(request)
        desk.deliver(at=desk.later(minutes=1))
        desk.refresh()
        assert desk.index_state(message_id) == "NDLV"
    return message_id, requests


def test_each_version_says_who_made_it_in_which_request_and_how_it_differs(desk, edited, personas):
    message_id, (first, second) = edited
    versions = desk.lineage(message_id)
    assert [(v.version, v.request_id, v.actor) for v in versions] == [
        (1, None, ""),
        (2, first.id, "operator"),
        (3, second.id, "operator"),
    ]
    assert [v.size for v in versions] == [len(ORIGINAL), len(FIRST_EDIT), len(BINARY_EDIT)]
    assert all(v.found for v in versions)
    diff = versions[1].diff
    assert not diff.binary and not diff.identical
    changed = [(kind, text) for kind, text in diff.lines if kind in ("added", "removed")]
    assert changed == [("removed", "customer: none"), ("added", "customer: ACME")]
    assert ("same", "<script>alert(1)</script>") in diff.lines
    assert versions[2].diff.binary

    html = login(personas["operator"]).get(reverse("message-detail", args=[message_id]))
    page = html.content.decode()
    section = page[page.index('id="body-lineage"') :]
    assert f'href="{reverse("request-detail", args=[first.id])}"' in section
    assert f'href="{reverse("request-detail", args=[second.id])}"' in section
    assert '<span class="diff-removed">- customer: none</span>' in section
    assert '<span class="diff-added">+ customer: ACME</span>' in section
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section
    assert "<script>alert(1)" not in page
    assert "one of them is binary" in section


def test_a_reader_without_the_body_permission_sees_the_versions_but_no_diff(edited, personas):
    message_id, (first, _) = edited
    page = login(personas["viewer"]).get(reverse("message-detail", args=[message_id]))
    html = page.content.decode()
    assert 'id="body-version-2"' in html and 'id="body-version-3"' in html
    assert f'href="{reverse("request-detail", args=[first.id])}"' in html
    # (The handler's failure reasons quote the body: that is the ledger's, not the diff's.)
    assert 'class="body-diff"' not in html and 'class="diff-added"' not in html


def test_a_message_never_edited_shows_no_versions(desk, personas):
    desk.queue("orders")
    (message_id,) = desk.quarantine("orders", ["permanent"])
    page = login(personas["operator"]).get(reverse("message-detail", args=[message_id]))
    assert 'id="body-lineage"' not in page.content.decode()
