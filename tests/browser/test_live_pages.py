"""The queues page and the lists follow by themselves, without a reload: an administrator who
re-enables a queue sees it disabled again when its handler fails again, and why (not the stale
"enabled again"), and a list shows what changed. A region someone works in is left alone."""

import re

import pytest
from playwright.sync_api import expect

from console.queues.models import Queue
from console.readmodels.models import MessageIndex
from tests.browse.conftest import Index

pytestmark = [pytest.mark.slow]


@pytest.fixture
def invoices(transactional_db, lake_root, settings):
    settings.DASHBOARD_POLL_SECONDS = 1
    index = Index()
    index.queue("invoices", enabled=False, disabled_reason="5 failed attempts in a row")
    index.queue("orders")
    index.row("inv-1", queue="invoices", state="WAIT")
    return index


def test_a_reenabled_queue_shows_disabled_again_and_why_without_a_reload(personas, invoices, tab):
    page = tab.page
    tab.accept_dialogs = True
    tab.login("admin", "/queues/")
    row = page.locator("#queue-table tr.queue-row").filter(has_text="invoices")
    with page.expect_navigation():
        row.get_by_role("button", name="Re-enable").click()
    expect(row.locator(".pill").first).to_have_text("enabled")
    page.evaluate("window.__same_page = true")

    # The next delivery run fails five times in a row again.
    Queue.objects.filter(name="invoices").update(
        enabled=False, disabled_reason="queue disabled: 5 failed attempts in a row (again)"
    )

    expect(row.locator(".pill").first).to_have_text("disabled")
    expect(row).to_contain_text("5 failed attempts in a row (again)")
    expect(row.get_by_role("button", name="Re-enable")).to_be_visible()
    assert page.evaluate("window.__same_page") is True
    expect(page.locator("#live-as-of-line time")).to_have_attribute(
        "datetime", re.compile(r"^\d{4}-")
    )
    assert page.locator("#live-stale").is_hidden()
    assert not tab.csp_violations and not tab.errors


def test_the_message_list_follows_but_leaves_a_ticked_page_alone(personas, invoices, tab):
    page = tab.page
    tab.login("operator", "/messages/?queue=invoices")
    rows = page.locator("#message-table tbody tr.message-row")
    expect(rows).to_have_count(1)
    page.evaluate("window.__same_page = true")

    invoices.row("inv-2", queue="invoices")
    expect(rows).to_have_count(2)
    expect(page.locator("#match-count")).to_contain_text("2 matching")

    rows.filter(has_text="inv-2").locator("input.select-message").check()
    invoices.row("inv-3", queue="invoices")
    MessageIndex.objects.filter(message_id="inv-1").update(reason="changed")
    page.wait_for_timeout(2500)  # two polls: the ticked page stays as it is
    expect(rows).to_have_count(2)
    expect(page.locator("#selection-count")).to_have_text("1 selected")
    assert page.evaluate("window.__same_page") is True
    assert not tab.csp_violations and not tab.errors
