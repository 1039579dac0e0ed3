"""The keyboard shortcuts of the message list, as in Gmail or GitHub: j and k move, x selects,
o opens, ? shows the help, / goes to the search box; none of them while typing in a field. And,
for someone who may request an action, r, f and e open the request of a retry, a fail or an end
with error of the selected messages (or of the current row), to be confirmed there."""

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from console.decisions.models import ActionRequest, Selection
from tests.browser.quarantine import quarantined_orders

pytestmark = [pytest.mark.slow]


@pytest.fixture
def quarantined(transactional_db, lake_root):
    """Four quarantined messages of orders, listed newest failure first: q-3, q-2, q-1, q-0."""
    return quarantined_orders([f"q-{i}" for i in range(4)])


def _selected(page):
    """The action the opened request page is for, and the ids of the selection it acts on."""
    query = parse_qs(urlparse(page.url).query)
    assert query["scope"] == ["selection"], page.url
    selection = Selection.objects.get(key=query["selection"][0])
    return query["action"][0], sorted(selection.ids)


@pytest.mark.spark
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


def test_r_opens_the_retry_of_the_rows_selected_with_the_keyboard(personas, quarantined, tab):
    page = tab.page
    tab.login("operator", "/messages/?state=NDLV")
    rows = page.locator("#message-table tbody tr")
    keyboard = page.keyboard

    keyboard.press("j")
    keyboard.press("j")
    keyboard.press("x")  # q-2
    keyboard.press("j")
    keyboard.press("x")  # q-1
    expect(page.locator("#selection-count")).to_have_text("2 selected")
    expect(rows.nth(2)).to_have_attribute("aria-current", "true")

    with page.expect_navigation():
        keyboard.press("r")

    assert "/requests/quick" in page.url
    assert _selected(page) == ("reprocess", ["q-1", "q-2"])
    expect(page.locator("h1")).to_have_text("Retry 2 quarantined messages?")
    expect(page.locator("#quick-submit")).to_be_visible()  # to be confirmed: nothing decided yet
    assert not ActionRequest.objects.exists()
    assert not tab.csp_violations and not tab.errors


@pytest.mark.parametrize(
    "key, action, label",
    [("f", "fail", "Fail"), ("e", "end_with_error", "End with error")],
)
def test_f_and_e_open_the_request_of_the_current_row_when_none_is_selected(
    personas, quarantined, tab, key, action, label
):
    page = tab.page
    tab.login("operator", "/messages/?state=NDLV")
    keyboard = page.keyboard

    keyboard.press("j")
    keyboard.press("j")  # q-2, not ticked
    with page.expect_navigation():
        keyboard.press(key)

    assert _selected(page) == (action, ["q-2"])
    expect(page.locator("h1")).to_have_text(f"{label} 1 quarantined message?")
    assert not ActionRequest.objects.exists()
    assert not tab.csp_violations and not tab.errors


def test_the_help_names_the_decision_keys_to_whoever_may_use_them(personas, quarantined, tab):
    page = tab.page
    tab.login("operator", "/messages/?state=NDLV")

    page.keyboard.press("?")

    help = page.locator("#shortcuts")
    expect(help).to_be_visible()
    expect(help.locator("dt.decision-key")).to_have_text(["r", "f", "e"])
    expect(help).to_contain_text("Retry the selected messages (or the current row)")
    expect(help).to_contain_text("End with error the selected messages")
    assert not tab.csp_violations and not tab.errors


def test_a_viewer_gets_nothing_from_the_decision_keys(personas, quarantined, tab):
    page = tab.page
    tab.login("viewer", "/messages/?state=NDLV")
    rows = page.locator("#message-table tbody tr")
    url = page.url
    assert page.locator("#message-table[data-decide-keys]").count() == 0
    keyboard = page.keyboard

    keyboard.press("j")
    expect(rows.nth(0)).to_have_attribute("aria-current", "true")
    for key in ("x", "r", "f", "e"):
        keyboard.press(key)
    page.wait_for_load_state()

    assert page.url == url
    assert not Selection.objects.exists()
    keyboard.press("?")
    expect(page.locator("#shortcuts")).to_be_visible()
    expect(page.locator("#shortcuts dt.decision-key")).to_have_count(0)
    assert not re.search(r"Retry the selected", page.locator("#shortcuts").inner_text())
    assert not tab.csp_violations and not tab.errors
