"""Issue 3, as a user would do it: an operator filters the browser to one failure group, opens a
message and reads its JSON body and its reason; a viewer finds the body hidden."""

import json

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MISSING_CUSTOMER = "missing field: customer"


@pytest.fixture
def orders(engine, refresh):
    engine.queue("orders", handler="tests.browser.handlers.orders", max_failed_deliveries=1)
    refused = {
        f"order-{i}": json.dumps({"order_id": f"A-{i}", "items": [{"sku": "SKU-7", "qty": i}]})
        for i in (1, 2, 3)
    }
    unavailable = {
        f"order-{i}": json.dumps({"order_id": f"A-{i}", "customer": "c-9", "sku": f"SKU-{i}"})
        for i in (4, 5, 6)
    }
    engine.ingest("orders", {**refused, **unavailable}, content_type="application/json")
    engine.deliver()
    refresh()
    return sorted(refused), sorted(unavailable)


def _rows(page):
    return page.locator("#message-table tbody tr").all_inner_texts()


def test_an_operator_reads_a_body_a_viewer_does_not(personas, orders, tab):
    refused, unavailable = orders
    page = tab.page
    tab.login("operator")

    # The groups page, a group's page, its messages in the browser.
    tab.goto("/groups/")
    group = page.locator("#group-table tr").filter(has_text=MISSING_CUSTOMER)
    with page.expect_navigation():
        group.get_by_role("link").click()
    with page.expect_navigation():  # the group's page, then its messages in the browser
        page.locator("#group-browse-link").click()
    rows = _rows(page)
    assert len(rows) == len(refused), rows
    assert all(MISSING_CUSTOMER in row for row in rows), rows
    assert not any(message_id in row for row in rows for message_id in unavailable)

    # The filters form says which group it shows: submitting it again keeps the same rows.
    with page.expect_navigation():
        page.locator("#filters [type=submit]").first.click()
    assert _rows(page) == rows

    with page.expect_navigation():
        page.locator("#message-table").get_by_role("link", name="order-2").click()
    assert page.url.endswith("/messages/order-2/")
    body = page.locator("#message-body").inner_text()
    assert '"order_id": "A-2"' in body  # pretty-printed: a space after each colon...
    assert '\n  "items": [' in body  # ... and one key per indented line
    assert MISSING_CUSTOMER in page.locator("#message-reason").inner_text()
    assert page.locator("#body-hidden").count() == 0
    history = page.locator("#message-history li").all_inner_texts()
    assert [e for e in history if "NDLV" in e and MISSING_CUSTOMER in e], history
    detail = page.url

    tab.logout()
    tab.login("viewer")
    page.goto(detail)
    assert page.locator("#body-hidden").is_visible()
    assert page.locator("#message-body").count() == 0
    assert "order_id" not in page.locator("main").inner_text()
    assert MISSING_CUSTOMER in page.locator("#message-reason").inner_text()
