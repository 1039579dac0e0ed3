"""A standing rule in the browser: the new rule's form shows the parameters of the chosen kind
only; an administrator proposes an archive, and an approver, who alone may, approves it on its
page after the browser asks.

The data is put in the index by hand: no Spark, no delivery run."""

import pytest
from playwright.sync_api import expect

from console.rules.models import StandingRule
from tests.browse.conftest import Index


@pytest.fixture
def desk(transactional_db, lake_root, personas):
    index = Index()
    index.queue("orders")
    index.group("g1")
    return personas


def test_the_form_shows_the_kinds_parameters_and_a_second_person_approves(desk, tab):
    page = tab.page
    tab.login("admin", "/rules/new?group=g1")
    days = page.locator("input[name=days]")
    to_queue = page.locator("select[name=to_queue]")
    delay = page.locator("input[name=delay_seconds]")

    page.locator("input[name=kind][value=redirect]").check()
    expect(to_queue).to_be_visible()
    expect(days).to_be_hidden()
    page.locator("input[name=kind][value=auto_retry]").check()
    expect(delay).to_be_visible()
    expect(to_queue).to_be_hidden()
    page.locator("input[name=kind][value=archive]").check()
    expect(days).to_be_visible()
    expect(delay).to_be_hidden()

    page.locator("input[name=name]").fill("old-orders")
    days.fill("30")
    page.locator("textarea[name=comment]").fill("a month is enough")
    page.locator("#rule-submit").click()
    expect(page.locator("#rule-status")).to_have_text("proposed")
    expect(page.locator("#approve-submit")).to_have_count(0)

    rule = StandingRule.objects.get()
    tab.logout()
    tab.login("approver", f"/rules/{rule.id}/")
    tab.accept_dialogs = True
    page.locator("#approve-submit").click()
    expect(page.locator("#rule-status")).to_have_text("active")
    assert any("Approve this rule? It acts from now." in d for d in tab.dialogs)
    rule.refresh_from_db()
    assert rule.decided_by.username == "approver"
    assert not tab.errors and not tab.csp_violations
