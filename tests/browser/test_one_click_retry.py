"""Retry a failure group in one click, as an operator would from the dashboard: the group's
"Retry" button, a short confirmation that says how many and that a second person must approve,
then the approver's approval; the messages are back in TBDL and delivered once the handler is
fixed. The spark worker's part runs in this process, as in test_decision_flow."""

import pytest

from console.decisions.execution import action_request_execute
from console.decisions.models import ActionRequest
from console.queues.models import Queue
from tests.browser.conftest import MISSING_CUSTOMER

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_a_group_is_retried_in_one_click_and_approved_by_a_second_person(
    personas, refused, engine, tab
):
    page = tab.page
    tab.accept_dialogs = True  # the approval asks "are you sure?"
    tab.login("operator", "/")
    with page.expect_navigation():
        page.locator("#top-groups tr").filter(has_text=MISSING_CUSTOMER).get_by_role(
            "link", name=MISSING_CUSTOMER
        ).click()
    assert MISSING_CUSTOMER in page.locator("#group-title").inner_text()  # its pattern, no hash

    with page.expect_navigation():
        page.locator("#quick-retry").click()
    assert page.locator("h1").inner_text() == f"Retry {len(refused)} quarantined messages?"
    assert "orders" in page.locator("#quick-queues").inner_text()
    assert "second person must approve" in page.locator("#quick-approval").inner_text()
    with page.expect_navigation():
        page.locator("#quick-submit").click()
    request = ActionRequest.objects.get()
    assert (request.status, request.count, request.action) == ("pending", len(refused), "reprocess")
    assert page.url.endswith(f"/requests/{request.id}/")
    assert MISSING_CUSTOMER in page.locator("#scope-group").inner_text()
    tab.logout()

    tab.login("approver", f"/requests/{request.id}/")
    with page.expect_navigation():
        page.locator("#approve-submit").click()
    assert action_request_execute(request_id=request.id, spark=engine.spark).status == "done"
    assert {engine.state(m)["state"] for m in refused} == {"TBDL"}

    Queue.objects.filter(name="orders").update(handler="tests.handlers_for_tests.always_ok")
    engine.deliver(at=engine.later(minutes=1))
    assert {engine.state(m)["state"] for m in refused} == {"DLVD"}
    assert not tab.csp_violations and not tab.errors
