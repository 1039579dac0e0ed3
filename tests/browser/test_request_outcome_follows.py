"""A request's outcome keeps up with what its page already knows (issue 45): while a canary is
watched, the steps table says its message was delivered as soon as the sweeper reads it, and
the outcome section says the same at the same time, without a reload of the page and before
the read models are refreshed. The spark worker's part and the sweeper run in this process, as
their Celery tasks would call them."""

import pytest
from playwright.sync_api import expect

from console.decisions.execution import action_request_execute
from console.decisions.services import Action, action_request_approve, action_request_create
from console.decisions.tasks import decisions_sweep_task
from console.queues.models import Queue

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_the_outcome_says_what_the_steps_say_without_a_reload(personas, refused, engine, tab):
    request = action_request_create(
        actor=personas["operator"],
        scope={"kind": "selection", "ids": refused},
        action=Action(kind="reprocess"),
        comment="customer is optional now",
        canary=1,
    )
    request = action_request_approve(actor=personas["approver"], request=request)
    page = tab.page
    tab.login("operator", f"/requests/{request.id}/")
    expect(page.locator("#outcome")).to_be_hidden()  # nothing decided yet

    # The canary goes: the outcome appears with it, its message on its way.
    assert action_request_execute(request_id=request.id, spark=engine.spark).status == "canary"
    expect(page.locator("#step-1 .step-status")).to_have_text("watching")
    expect(page.locator("#outcome-pending")).to_have_text("1")
    expect(page.locator("#outcome-not_reached")).to_have_text(str(len(refused) - 1))

    # Delivered, and the sweeper says so: the steps table and the outcome agree, with no
    # refresh of the read models in between (the fixture's refreshes are the test's to do).
    Queue.objects.filter(name="orders").update(handler="tests.handlers_for_tests.always_ok")
    engine.deliver(at=engine.later(minutes=1))
    assert decisions_sweep_task()["canaries"] == {request.id: "passed"}
    expect(page.locator("#step-1 .step-delivered")).to_have_text("1")
    expect(page.locator("#outcome-delivered")).to_have_text("1")
    expect(page.locator("#outcome-pending")).to_have_text("0")
    assert "/requests/" in page.url and not tab.csp_violations and not tab.errors
