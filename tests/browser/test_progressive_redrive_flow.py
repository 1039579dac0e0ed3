"""Issue 15, as users would do it: an operator asks for a progressive redrive on the request form,
the approver sees its steps and threshold before approving, and the request page follows each step
live (the step now, each step's status and re-failure rate) until a step fails again over the
threshold and the request stops, saying why.

The spark worker's part and the decisions sweeper run in this process, as their Celery tasks
would call them."""

from urllib.parse import urlencode

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from console.decisions.execution import action_request_execute
from console.decisions.models import ActionRequest
from console.decisions.tasks import decisions_sweep_task
from console.queues.models import Queue

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _step_goes(request, engine, page, step):
    """The spark worker sends the request's next step; the page follows without a reload."""
    assert action_request_execute(request_id=request.id, spark=engine.spark).status == "canary"
    expect(page.locator("#progress-step-now")).to_have_text(step)


def _step_delivered(engine, handler, *, minutes):
    """The step's messages delivered by `handler` `minutes` on; the sweeper's verdicts."""
    Queue.objects.filter(name="orders").update(handler=handler)
    engine.deliver(at=engine.later(minutes=minutes))
    return decisions_sweep_task()["canaries"]


def test_a_progressive_redrive_is_followed_step_by_step_until_a_spike_stops_it(
    personas, refused, engine, tab
):
    page = tab.page
    tab.accept_dialogs = True

    query = urlencode([("scope", "selection"), *(("ids", m) for m in refused)])
    tab.login("operator", f"{reverse('request-new')}?{query}")
    expect(page.locator("input[name=steps]")).to_have_value("1, 10, 100, 1000")
    page.locator("input[name=progressive]").check()
    page.locator("input[name=steps]").fill("1, 2")
    page.locator("input[name=refailure_threshold]").fill("0")
    page.locator("textarea[name=comment]").fill("customer is optional now")
    with page.expect_navigation():
        page.locator("#request-submit").click()
    request = ActionRequest.objects.get()
    assert (request.steps, request.refailure_threshold) == ([1, 2], 0.0)
    tab.logout()

    # The approver sees the steps before approving, and the confirmation says them again.
    tab.login("approver", reverse("request-detail", args=[request.id]))
    expect(page.locator("#request-steps")).to_contain_text("1, 2 messages, then the rest (2)")
    expect(page.locator("#step-2 .step-status")).to_have_text("waiting")
    with page.expect_navigation():
        page.locator("#approve-submit").click()
    assert any("in steps of 1, 2" in d for d in tab.dialogs), tab.dialogs

    # Step 1 goes and is watched; the page follows without a reload.
    _step_goes(request, engine, page, "1")
    expect(page.locator("#step-1 .step-status")).to_have_text("watching")
    verdicts = _step_delivered(engine, "tests.handlers_for_tests.always_ok", minutes=1)
    assert verdicts == {request.id: "passed"}
    expect(page.locator("#step-1 .step-status")).to_have_text("passed")
    expect(page.locator("#step-1 .step-rate")).to_have_text("0%")
    expect(page.locator("#step-1 .step-delivered")).to_have_text("1")

    # Step 2's messages fail again: the request stops there, the rest untouched.
    _step_goes(request, engine, page, "2")
    verdicts = _step_delivered(engine, "tests.browser.handlers.orders", minutes=2)
    assert verdicts == {request.id: "failed"}
    expect(page.locator("#request-status")).to_have_text("failed")
    expect(page.locator("#step-2 .step-status")).to_have_text("failed")
    expect(page.locator("#step-2 .step-rate")).to_have_text("100%")
    expect(page.locator("#step-2 .step-reasons")).to_have_text(
        "permanent failure: missing field: customer (2)"
    )
    expect(page.locator("#progress-error")).to_contain_text(
        "stopped: step 2 of 2: 2 of 2 message(s) failed again"
    )
    expect(page.locator("#progress-error")).to_contain_text(
        "The rest of the set (2 message(s)) was not touched."
    )
    assert [engine.state(m)["state"] for m in refused[3:]] == ["NDLV", "NDLV"]
    assert not tab.csp_violations and not tab.errors
