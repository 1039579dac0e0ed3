"""The glossary is one key (or the Help button) away on every page: the help dialog links to
the states, the rules R1-R17 and the words of the screens."""

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow]


def test_a_viewer_finds_the_rules_through_the_help_dialog(transactional_db, personas, tab):
    page = tab.page
    tab.login("viewer")

    page.locator("main h1").click()  # the keys go to the page, not to a field
    page.keyboard.press("?")
    help_dialog = page.locator("#shortcuts")
    expect(help_dialog).to_be_visible()
    with page.expect_navigation():
        help_dialog.locator("#help-glossary").click()

    assert page.url.endswith("/help/glossary/")
    expect(page.locator("#rule-R1")).to_contain_text("lifecycle")
    expect(page.locator("#rule-R17")).to_contain_text("who must approve")
    expect(page.locator("#term-blacklist-candidate")).to_be_visible()
    assert not tab.csp_violations and not tab.errors


def test_an_operator_who_does_not_know_the_key_finds_the_glossary_through_the_help_button(
    transactional_db, personas, tab
):
    page = tab.page
    tab.login("operator")

    page.locator("#help-button").click()
    help_dialog = page.locator("#shortcuts")
    expect(help_dialog).to_be_visible()
    with page.expect_navigation():
        help_dialog.locator("#help-glossary").click()

    expect(page.locator("#rule-R17")).to_be_visible()
    assert not tab.csp_violations and not tab.errors
