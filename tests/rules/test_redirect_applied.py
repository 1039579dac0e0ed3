"""A standing redirect carried out on real messages (the decisions' desk, Spark): the person's
reprocess lands in the rule's queue and is delivered there, and the message's history says which
rule sent it there."""

import pytest
from django.urls import reverse

from tests.browse.conftest import login

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_a_redirected_reprocess_lands_in_the_other_queue_and_the_history_says_why(
    desk, rules, personas
):
    desk.queue("orders", handler="tests.handlers_for_tests.scripted")
    desk.queue("orders-v2", handler="tests.handlers_for_tests.always_ok")
    (message_id,) = desk.quarantine("orders", ["permanent"])
    rule = rules.active("redirect", queue="orders", to_queue="orders-v2")

    request = desk.execute(desk.request({"kind": "message", "id": message_id}))
    assert (request.status, request.target_queue, request.done) == ("done", "orders-v2", 1)
    assert desk.index_state(message_id) == "TBDL"
    desk.deliver()

    last = desk.history(message_id)[-1]
    assert (last["queue"], last["to_state"]) == ("orders-v2", "DLVD")
    page = login(personas["viewer"]).get(reverse("message-detail", args=[message_id]))
    said = f"Sent to orders-v2 rather than back to orders by standing rule {rule.id}"
    assert said in page.content.decode()
    assert f'href="{reverse("rule-detail", args=[rule.id])}"' in page.content.decode()
