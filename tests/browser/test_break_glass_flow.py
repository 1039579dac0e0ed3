"""Issue 30, break-glass as the night shift meets it (R17): the approver on call asks to reprocess
a stuck set and, with no one else awake, executes it alone, with a reason and the confirmation of
what happens; the administrator's bell rings, the dashboard lists the decision until someone
reviews it, and the administrator reviews it from the alert.

The spark worker's part (carrying out the request) runs in this process on the test session's
Spark, as in test_decision_flow."""

import pytest

from console.alerts.services import alerts_mark_read
from console.decisions.execution import action_request_execute
from console.decisions.models import ActionRequest
from console.decisions.services import Action, action_request_create

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REASON = "orders stuck since 02:00; the shop cannot take orders; no second approver answers"


def test_the_approver_on_call_executes_alone_and_an_administrator_reviews_it_from_the_alert(
    personas, refused, engine, settings, tab
):
    settings.BREAK_GLASS = True
    request = action_request_create(
        actor=personas["approver"],
        scope={"kind": "selection", "ids": refused},
        action=Action(kind="reprocess"),
        comment="the customer field is optional now",
    )
    assert request.status == ActionRequest.PENDING
    alerts_mark_read(user=personas["admin"])  # what came before (the new failure group)
    page = tab.page
    tab.accept_dialogs = True

    # The approver on call cannot approve their own request, but may break the glass.
    tab.login("approver", f"/requests/{request.id}/")
    assert page.locator("#approve-submit").count() == 0
    consequence = page.locator("#break-glass-consequence").inner_text()
    assert consequence.startswith("5 messages will be reprocessed now, without a second person")
    assert "Every other approver and administrator is told at once" in consequence
    page.locator("textarea[name=reason]").fill(REASON)
    page.locator("#break-glass-confirm").check()
    with page.expect_navigation():
        page.locator("#break-glass-submit").click()
    assert any("Break the glass?" in d for d in tab.dialogs)
    request.refresh_from_db()
    assert (request.status, request.break_glass_by) == ("approved", personas["approver"])
    assert page.locator("#break-glass-by").inner_text().startswith("approver ")
    assert page.locator("#break-glass-reason").inner_text() == REASON
    assert page.locator("#review-form").count() == 0  # not theirs to review

    # The spark worker carries it out.
    assert action_request_execute(request_id=request.id, spark=engine.spark).status == "done"
    assert {engine.state(m)["state"] for m in refused} == {"TBDL"}
    tab.logout()

    # The administrator: the dashboard lists it, and the bell rings.
    tab.login("admin", "/")
    panel = page.locator("#break-glass-unreviewed")
    assert f"Request {request.id}" in panel.inner_text()
    assert "executed alone by approver" in panel.inner_text()
    assert page.locator("#bell-count").inner_text() == "1"
    with page.expect_navigation():
        page.locator("#bell").click()
    row = page.locator(".alert-row").first
    assert "approver broke the glass" in row.locator(".alert-title").inner_text()
    assert REASON in row.locator(".alert-text").inner_text()
    with page.expect_navigation():
        row.locator("a.alert-title").click()
    assert page.url.endswith(f"/requests/{request.id}/")

    # ... and reviews it.
    page.locator("#review-agree").check()
    with page.expect_navigation():
        page.locator("#review-submit").click()
    assert page.locator("#review-outcome").inner_text().startswith("agreed by admin ")
    assert page.locator("#review-form").count() == 0
    request.refresh_from_db()
    assert (request.reviewed_by, request.review_agrees) == (personas["admin"], True)

    # Reviewed: the dashboard no longer lists it.
    tab.goto("/")
    assert page.locator("#break-glass-unreviewed").count() == 0
    assert not tab.csp_violations and not tab.errors
