"""The bell, as an administrator meets it: the engine disables a queue during a delivery run;
the bell on the next page shows one unread alert; it opens the alert, which leads to the queues
page, and is read from then on. Its text, the engine's and the handler's, runs no script."""

import pytest

pytestmark = [pytest.mark.slow]


def test_the_bell_rings_when_the_engine_disables_a_queue_and_leads_to_it(personas, engine, tab):
    engine.queue("invoices", handler="tests.handlers_for_tests.always_transient", disable_after=3)
    page = tab.page
    tab.login("admin", "/queues/")
    assert page.locator("#bell-count").count() == 0
    assert page.locator("#bell").get_attribute("aria-label") == "Alerts: 0 unread"

    engine.ingest("invoices", ["<img src=x onerror=alert(1)>"] * 4)
    engine.deliver()
    tab.goto("/queues/")
    assert page.locator("#bell-count").inner_text() == "1"
    with page.expect_navigation():
        page.locator("#bell").click()
    assert page.url.endswith("/alerts/")
    row = page.locator(".alert-row").first
    assert "unread" in row.get_attribute("class")
    assert row.locator(".alert-title").inner_text() == "Queue invoices was disabled"
    assert "3 failed attempts in a row" in row.locator(".alert-text").inner_text()
    assert page.locator("#bell-count").count() == 0  # shown: read

    with page.expect_navigation():
        row.locator("a.alert-title").click()
    assert page.url.endswith("/queues/")
    tab.goto("/alerts/")
    assert "unread" not in page.locator(".alert-row").first.get_attribute("class")
    assert tab.dialogs == [] and tab.errors == [] and tab.csp_violations == []
