"""The dashboard follows the counts by itself: new quarantines show without a reload, a new
queue's row comes with one (the page reloads itself), and counts that lag behind the lake say
why. Polled from /api/v1/stats by a static script: no inline script, the CSP kept."""

import json
import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_the_dashboards_counts_change_without_a_reload(
    personas, refused, engine, refresh, tab, settings
):
    settings.DASHBOARD_POLL_SECONDS = 1
    page = tab.page
    tab.login("operator", "/")
    quarantined = page.locator('#quarantined-count [data-live="quarantined"]')
    assert quarantined.inner_text() == str(len(refused))
    page.evaluate("window.__same_page = true")
    # The refresh's time as people say it, the full time with its zone on hover.
    as_of = page.locator("#stats-as-of time")
    assert re.fullmatch(r"now|\d+ seconds? ago|\d+ minutes? ago", as_of.inner_text())
    assert re.search(r"\(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)$", as_of.get_attribute("title"))

    more = {f"order-{i}": json.dumps({"order_id": f"A-{i}", "items": []}) for i in (6, 7)}
    engine.ingest("orders", more, content_type="application/json")
    engine.deliver()
    refresh()

    expect(quarantined).to_have_text(str(len(refused) + 2))
    expect(
        page.locator('[data-live="queue"][data-queue="orders"][data-state="NDLV"]')
    ).to_have_text("7")
    assert page.evaluate("window.__same_page") is True  # no reload
    assert page.locator("#stats-stale").is_hidden()

    # A queue the page has no row for: the page reloads itself to show it.
    settings.STATS_STALE_SECONDS = 1
    engine.queue("refunds", handler="tests.browser.handlers.orders", max_failed_deliveries=1)
    engine.ingest("refunds", {"refund-1": '{"items": []}'}, content_type="application/json")
    engine.deliver()
    refresh()
    expect(page.locator("#queue-counts")).to_contain_text("refunds", timeout=15_000)
    assert page.evaluate("window.__same_page") is None
    # Old counts with every change in them are not stale: nothing is said...
    page.wait_for_timeout(2_000)
    assert page.locator("#stats-stale").is_hidden()
    # ...but a delivery no refresh has folded, waiting longer than STATS_STALE_SECONDS, is: the
    # warning says why (no refresh ran since; is the spark worker running?).
    engine.ingest("refunds", {"refund-2": '{"items": []}'}, content_type="application/json")
    engine.deliver()
    stale = page.locator("#stats-stale")
    expect(stale).to_contain_text("The counts lack changes made")
    expect(stale).to_contain_text("is the spark worker running?")
    assert stale.get_attribute("data-reason") == "not_run"
    assert not tab.csp_violations and not tab.errors
