"""Issue 12, as administrators would do it: one asks for the approver role for an operator, the
grant waits (the operator cannot approve yet, and the one who asked cannot confirm it), a second
administrator confirms it on the same kind of screen as a bulk approval, and the grant's page
shows both steps from the audit trail."""

import pytest
from django.contrib.auth.models import Group, User

from tests.conftest import settled

pytestmark = [pytest.mark.slow]


@pytest.fixture
def second_admin(transactional_db, personas):
    user = User.objects.create_user("admin2", password="pw-admin2-1234")
    user.groups.add(Group.objects.get(name="admin"))
    return settled(user)


def _roles(username):
    return sorted(User.objects.get(username=username).groups.values_list("name", flat=True))


def test_a_second_administrator_confirms_the_approver_role_for_an_operator(
    personas, second_admin, tab
):
    page = tab.page
    tab.accept_dialogs = True

    # The first administrator asks.
    tab.login("admin", "/role-grants/")
    page.select_option("select[name=user]", "operator")
    page.select_option("select[name=role]", "approver")
    page.fill("textarea[name=comment]", "joins the approvers' rota")
    with page.expect_navigation():
        page.locator("#grant-submit").click()
    assert "/role-grants/" in page.url
    assert page.locator("#grant-status").inner_text() == "pending"
    assert page.locator("#own-grant-note").count() == 1
    assert page.locator("#confirm-submit").count() == 0
    assert _roles("operator") == ["operator"]
    grant_url = page.url
    tab.logout()

    # The second one finds it in the navigation (its Administration menu), and confirms.
    tab.login("admin2")
    tab.goto("/")
    page.locator("#menu-administration > summary").click()
    with page.expect_navigation():
        page.locator("#nav-role-grants").click()
    with page.expect_navigation():
        page.locator("#pending-grant-table .grant-link").first.click()
    assert page.url == grant_url
    assert page.locator("#grant-comment").inner_text() == "joins the approvers' rota"
    with page.expect_navigation():
        page.locator("#confirm-submit").click()
    assert page.locator("#grant-status").inner_text() == "confirmed"
    assert "by admin2" in page.locator("#grant-decision").inner_text()
    assert any("Give operator the role approver?" in d for d in tab.dialogs)
    audit = page.locator("#grant-audit").inner_text()
    assert "role grant requested" in audit and "role grant confirmed" in audit
    assert _roles("operator") == ["approver", "operator"]
    assert not tab.csp_violations and not tab.errors
