"""The API explains itself from the console: every signed-in page links the API docs, and they
open on how to get a token and send a first message with curl."""

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.slow]


def test_an_operator_follows_the_api_docs_link_to_a_first_message_with_curl(
    transactional_db, personas, tab
):
    page = tab.page
    tab.login("operator")

    with page.expect_navigation():
        page.locator("#nav-api-docs").click()

    assert page.url.endswith("/api/docs/")
    docs = page.locator("#api-docs")
    expect(docs).to_contain_text("curl -X POST", timeout=30_000)
    expect(docs).to_contain_text("/api/v1/messages")
    assert not tab.csp_violations and not tab.errors
