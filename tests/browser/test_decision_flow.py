"""Issue 4, as users would do it: an operator asks to reprocess a whole failure group, an approver
approves it, the progress bar reaches 100 %, the messages are delivered once their handler is
fixed, and the auditor sees every step in the audit screen.

The spark worker's part (carrying out the approved request) runs in this process on the test
session's Spark, as the Celery task would call it; the processes tests cover real workers."""

import pytest
from playwright.sync_api import expect

from console.decisions.execution import action_request_execute
from console.decisions.models import ActionRequest
from console.queues.models import Queue
from tests.browser.conftest import MISSING_CUSTOMER

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_a_group_is_reprocessed_with_four_eyes_and_the_auditor_sees_every_step(
    personas, refused, engine, tab
):
    page = tab.page
    tab.accept_dialogs = True

    # The operator asks, from the failure group's page.
    tab.login("operator", "/groups/")
    with page.expect_navigation():
        page.locator("#group-table tr").filter(has_text=MISSING_CUSTOMER).get_by_role(
            "link"
        ).click()
    with page.expect_navigation():
        page.locator("#group-request-link").click()
    # The form shows the fields of the chosen action only.
    ending = page.locator("fieldset[data-for-action=end_with_error]")
    page.locator("input[name=action][value=end_with_error]").check()
    expect(ending).to_be_visible()
    expect(page.locator("fieldset[data-for-action=reprocess]")).to_be_hidden()
    page.locator("input[name=action][value=reprocess]").check()
    expect(ending).to_be_hidden()
    expect(page.locator("select[name=target_queue]")).to_be_visible()
    page.locator("textarea[name=comment]").fill("customer is optional now")
    with page.expect_navigation():
        page.locator("#request-submit").click()
    assert "/requests/" in page.url
    request = ActionRequest.objects.get()
    assert (request.status, request.count) == ("pending", len(refused))
    assert page.locator("#own-request-note").count() == 1
    assert page.locator("#approve-submit").count() == 0
    tab.logout()

    # The approver sees the frozen set and approves it.
    tab.login("approver", f"/requests/{request.id}/")
    assert request.ids_sha256 in page.content()
    with page.expect_navigation():
        page.locator("#approve-submit").click()
    request.refresh_from_db()
    assert request.status == "approved"

    # The spark worker carries it out while the page watches.
    assert action_request_execute(request_id=request.id, spark=engine.spark).status == "done"
    # The page polls the API; the bar fills without a reload.
    expect(page.locator("#progress-percent")).to_have_text("100%")
    assert page.locator("#progress-bar").evaluate("bar => bar.value") == 100
    assert page.locator("#progress-done").inner_text() == str(len(refused))
    # A poll may land between the last chunk's commit (100 %) and the end of the execution: the
    # next one shows it done (and reloads the page).
    expect(page.locator("#request-status")).to_have_text("done")
    assert {engine.state(m)["state"] for m in refused} == {"TBDL"}
    tab.logout()

    # The handler is fixed; the next delivery run delivers them, once each.
    Queue.objects.filter(name="orders").update(handler="tests.handlers_for_tests.always_ok")
    engine.deliver(at=engine.later(minutes=1))
    for message_id in refused:
        assert engine.state(message_id)["state"] == "DLVD"
        assert [t for t in engine.transitions(message_id) if t == ("DLNG", "DLVD")] == [
            ("DLNG", "DLVD")
        ]

    # The auditor lands on the audit screen and finds every step of the request.
    tab.login("auditor")
    assert page.url.rstrip("/").endswith("/audit")
    tab.goto(f"/audit/?target_type=request&target_id={request.id}")
    trail = page.locator("main").inner_text()
    # Each action in words ("request approved"), its code kept on the cell.
    actions = page.locator("td.audit-action").evaluate_all(
        "cells => cells.map((cell) => cell.dataset.action)"
    )
    for step in (
        "request.created",
        "request.approved",
        "execution.started",
        "execution.finished",
    ):
        assert step in actions, step
    assert "request approved" in trail
    assert "operator" in trail and "approver" in trail
    assert not tab.csp_violations and not tab.errors
