"""Selecting on the message list as in a mail client: shift-click ticks a range, the header's
box ticks the page, the selection is kept across pages in one sticky bar, and the bar acts on
all of it at once, posting the ids (a URL would not hold them)."""

import pytest
from playwright.sync_api import expect

from console.decisions.models import ActionRequest
from tests.browser.quarantine import quarantined_orders

pytestmark = [pytest.mark.slow]


@pytest.fixture
def sixty(transactional_db, lake_root):
    """60 quarantined messages of orders, the newest failure first: m-59 … m-00."""
    return quarantined_orders([f"m-{i:02d}" for i in range(60)])


def test_an_operator_selects_a_range_and_a_page_then_retries_them_all(personas, sixty, tab):
    page = tab.page
    tab.login("operator", "/messages/?size=25")
    boxes = page.locator("#message-table input.select-message")
    count = page.locator("#selection-count")
    expect(page.locator("#page-span")).to_have_text("1\N{EN DASH}25 of 60")

    boxes.nth(2).click()
    boxes.nth(6).click(modifiers=["Shift"])  # rows 3 to 7
    expect(count).to_have_text("5 selected")
    boxes.nth(4).click()  # a plain click unticks one
    expect(count).to_have_text("4 selected")

    with page.expect_navigation():
        page.locator("#page-next").click()
    expect(page.locator("#page-span")).to_have_text("26\N{EN DASH}50 of 60")
    expect(count).to_have_text("4 selected (4 on other pages)")
    page.locator("#select-page").check()
    expect(count).to_have_text("29 selected (4 on other pages)")
    expect(page.locator("#selection-bar")).to_be_in_viewport()
    page.mouse.wheel(0, 3000)  # the bar stays in view while the list scrolls
    expect(page.locator("#selection-bar")).to_be_in_viewport()

    with page.expect_navigation():
        page.locator("#page-prev").click()
    ticked = [boxes.nth(i).is_checked() for i in range(25)]
    assert [i for i, on in enumerate(ticked) if on] == [2, 3, 5, 6]  # kept across pages

    with page.expect_navigation():
        page.get_by_role("button", name="Retry").click()
    assert page.locator("h1").inner_text() == "Retry 29 quarantined messages?"
    with page.expect_navigation():
        page.locator("#quick-submit").click()
    request = ActionRequest.objects.get()
    chosen = [sixty[i] for i in (2, 3, 5, 6)] + sixty[25:50]
    assert sorted(request.scope["ids"]) == sorted(chosen)
    assert (request.action, request.count) == ("reprocess", 29)

    tab.goto("/messages/?size=25")  # the selection was handed over: a new one starts empty
    expect(count).to_have_text("Tick quarantined messages to act on them.")
    assert not any(boxes.nth(i).is_checked() for i in range(25))
    assert not tab.csp_violations and not tab.errors
