"""The search box, as an operator uses it: "/" from any page, an id straight to its message (one
delivered at once too), words of a reason to a count that opens a list of as many messages."""

import json
import re

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MISSING_CUSTOMER = "missing field: customer"


@pytest.fixture
def orders(engine, refresh):
    engine.queue("orders", handler="tests.browser.handlers.orders", max_failed_deliveries=1)
    engine.queue("fine", handler="workers.demo.handlers.noop")
    refused = {f"order-{i}": json.dumps({"order_id": f"A-{i}", "items": []}) for i in (1, 2, 3)}
    engine.ingest("orders", refused, content_type="application/json")
    engine.ingest("fine", {"receipt-9": "{}"}, content_type="application/json")
    engine.deliver()
    refresh()
    return sorted(refused)


def _search(tab, text):
    page = tab.page
    page.locator("main").click()  # "/" from the page, not from a field
    page.keyboard.press("/")
    box = page.locator("#search-box")
    assert box.evaluate("element => element === document.activeElement")
    box.fill(text)
    with page.expect_navigation():
        box.press("Enter")


def test_an_operator_finds_messages_by_id_and_by_reason_from_any_page(personas, orders, tab):
    page = tab.page
    tab.login("operator", "/groups/")

    _search(tab, "order-2")
    assert page.url.endswith("/messages/order-2/")
    assert MISSING_CUSTOMER in page.locator("#message-reason").inner_text()

    _search(tab, "receipt-9")  # delivered at once: never in the browser's index, still found
    assert page.url.endswith("/messages/receipt-9/")
    assert "DLVD" in page.locator("#message-history").inner_text()

    _search(tab, "order-")
    ids = page.locator("#search-ids a").all_inner_texts()
    assert ids == orders

    _search(tab, "customer")
    reasons = page.locator("#search-reasons a")
    count = int(re.match(r"\d+", reasons.inner_text()).group())
    assert count == len(orders)
    with page.expect_navigation():
        reasons.click()
    assert page.locator("#match-count strong").inner_text() == str(count)
    assert page.locator("#message-table tbody tr").count() == count

    assert tab.csp_violations == [] and tab.errors == []
