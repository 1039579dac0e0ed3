"""The keyboard shortcuts of the message list, as in Gmail or GitHub: j and k move, x selects,
o opens, ? shows the help, / goes to the search box; none of them while typing in a field."""

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_an_operator_moves_selects_and_opens_with_the_keyboard(personas, refused, tab):
    page = tab.page
    tab.login("operator", "/messages/?state=NDLV&sort=enqueued")
    rows = page.locator("#message-table tbody tr")
    assert rows.count() == len(refused)
    keyboard = page.keyboard

    keyboard.press("j")
    keyboard.press("j")
    expect(rows.nth(1)).to_have_class("message-row state-NDLV current")
    keyboard.press("x")
    assert rows.nth(1).locator("input[type=checkbox]").is_checked()
    keyboard.press("k")
    expect(rows.nth(0)).to_have_attribute("aria-current", "true")
    assert "current" not in (rows.nth(1).get_attribute("class") or "")

    keyboard.press("?")
    expect(page.locator("#shortcuts")).to_be_visible()
    keyboard.press("Escape")
    expect(page.locator("#shortcuts")).to_be_hidden()

    page.locator("#search-box").click()
    keyboard.type("jjx")  # typing in a field types
    assert page.locator("#search-box").input_value() == "jjx"
    assert rows.nth(2).locator("input[type=checkbox]").is_checked() is False

    page.locator("main h1").click()
    first = rows.nth(0).locator("a.message-link").inner_text()
    with page.expect_navigation():
        keyboard.press("o")
    assert page.url.endswith(f"/messages/{first}/")
    assert not tab.csp_violations and not tab.errors
