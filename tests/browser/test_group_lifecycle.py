"""An operator acknowledges a failure group from the dashboard's top list, then resolves it
there, in Chromium: each button posts its move, the page comes back saying so, the group shows
its new state, and the audit trail has both moves. The viewer sees the state, with no button."""

import pytest
from playwright.sync_api import expect

from console.audit.models import AuditEntry
from console.notes.lifecycle import group_status
from tests.browse.conftest import Index

pytestmark = [pytest.mark.slow]


@pytest.fixture
def groups(transactional_db, lake_root):
    index = Index()
    index.queue("orders")
    index.group("g1")
    index.row("order-1", group_id="g1")
    index.stats("orders", NDLV=1)
    return index


def test_an_operator_acknowledges_then_resolves_a_group_from_the_dashboard(groups, personas, tab):
    page = tab.page
    tab.login("operator", "/")
    row = page.locator("#top-groups tbody tr").first
    expect(row.locator(".group-status .pill")).to_have_text("open")

    with page.expect_navigation():
        row.locator("button.move-acknowledged").click()
    expect(page.locator(".flash")).to_contain_text("The failure group is acknowledged now.")
    row = page.locator("#top-groups tbody tr").first
    expect(row.locator(".group-status .pill")).to_have_text("acknowledged by operator")

    with page.expect_navigation():
        row.locator("button.move-resolved").click()
    expect(page.locator(".flash")).to_contain_text("The failure group is resolved now.")
    expect(page.locator("#top-groups .group-status .pill").first).to_have_text("resolved")
    assert group_status(fingerprint="g1").state == "resolved"
    assert list(
        AuditEntry.objects.filter(action__startswith="group.").values_list("actor", "action")
    ) == [("operator", "group.acknowledged"), ("operator", "group.resolved")]
    assert not tab.errors and not tab.csp_violations

    # The group's page tells how long each state lasted.
    tab.goto("/groups/g1/")
    periods = page.locator("#group-lifecycle tbody tr")
    expect(periods).to_have_count(3)
    expect(periods.nth(2)).to_contain_text("resolved")


def test_a_viewer_sees_a_groups_state_and_no_button(groups, personas, tab):
    tab.login("viewer", "/")
    pill = tab.page.locator("#top-groups .group-status .pill").first
    expect(pill).to_have_text("open")
    expect(tab.page.locator("#top-groups .group-move")).to_have_count(0)
