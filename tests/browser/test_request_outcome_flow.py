"""A finished request's outcome, as an operator reads it: the request page says how many of its
messages were delivered and how many failed again (and why), and each number opens the list of
those messages. Real quarantine, reprocess and delivery run; the spark worker's part runs in
this process, as in test_decision_flow."""

import pytest

from console.decisions.execution import action_request_execute
from console.decisions.services import Action, action_request_approve, action_request_create
from console.queues.models import Queue

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_the_request_page_shows_where_its_messages_are_now_and_each_number_lists_them(
    personas, engine, refresh, settings, tab
):
    settings.REFRESH_ON_COMMIT = False
    engine.queue("orders")
    engine.queue("payments")
    ids = engine.ingest("orders", ["permanent"] * 2, prefix="order")
    ids += engine.ingest("payments", ["permanent"], prefix="payment")
    engine.deliver()
    refresh()
    request = action_request_create(
        actor=personas["operator"],
        scope={"kind": "selection", "ids": ids},
        action=Action(kind="reprocess"),
        comment="the orders handler is fixed",
    )
    request = action_request_approve(actor=personas["approver"], request=request)
    assert action_request_execute(request_id=request.id, spark=engine.spark).status == "done"
    Queue.objects.filter(name="orders").update(handler="tests.handlers_for_tests.always_ok")
    engine.deliver(at=engine.later(minutes=1))
    refresh()

    page = tab.page
    tab.login("operator", f"/requests/{request.id}/")
    assert page.locator("#outcome-delivered").inner_text() == "2"
    assert page.locator("#outcome-failed_again").inner_text() == "1"
    assert page.locator("#outcome-total").inner_text() == "3"
    assert "PermanentFailure" in page.locator("#outcome-reasons").inner_text()
    assert "refresh" in page.locator("#outcome-as-of").inner_text()

    with page.expect_navigation():
        page.locator("#outcome-failed_again").click()
    assert "failed again" in page.locator("h1").inner_text()
    rows = page.locator("#outcome-messages tbody tr")
    assert rows.count() == 1
    assert "payment-0000" in rows.first.inner_text()
    assert "NDLV" in rows.first.inner_text()

    with page.expect_navigation():
        page.locator("#outcome-back").click()
    with page.expect_navigation():
        page.locator("#outcome-delivered").click()
    listed = page.locator("#outcome-messages tbody").inner_text()
    assert "order-0000" in listed and "order-0001" in listed and "payment" not in listed
    assert not tab.csp_violations and not tab.errors
