"""A standing redirect: while it is active, every reprocess of its queue's messages back to their
queue (made by anyone, on screen or through the API) goes to its other queue, said on the request
form before the request is made and recorded as the rule's application; until it is removed."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from console.decisions.services import Action, action_request_create
from console.queues.models import Queue
from console.rules.applying import auto_retry_apply
from console.rules.models import RuleApplication
from console.rules.services import rule_remove
from console.rules.tasks import rules_retry_task
from tests.browse.conftest import api, login
from tests.rules.conftest import GROUP_ID, reloaded, rule_audit


@pytest.fixture
def redirected(quarantine, rules):
    quarantine.queue("orders-v2")
    for name in ("o-1", "o-2"):
        quarantine.quarantined(name)
    quarantine.quarantined("p-1", queue="payments", group="p" * 64)
    return rules.active("redirect", queue="orders", to_queue="orders-v2")


@pytest.fixture
def redirect_and_retry(quarantine, rules):
    """A redirect of orders to orders-v2 and an auto-retry of the group, due at once; o-1
    quarantined in orders when the retry was approved."""
    quarantine.queue("orders-v2")
    redirect = rules.active("redirect", queue="orders", to_queue="orders-v2")
    retry = rules.active("auto_retry", group=GROUP_ID, delay_seconds=0, max_attempts=1)
    quarantine.now = retry.decided_at
    quarantine.quarantined("o-1")
    return redirect, retry


def reprocess(personas, ids, *, by="operator", **action):
    return action_request_create(
        actor=personas[by],
        scope={"kind": "selection", "ids": ids},
        action=Action(kind="reprocess", **action),
        comment="the handler is fixed",
    )


def test_a_reprocess_back_to_its_queue_goes_to_the_redirect_queue_and_is_recorded(
    redirected, personas
):
    request = reprocess(personas, ["o-1"])

    assert request.target_queue == "orders-v2"
    # The move was approved with the rule: one message of an operator's needs no one else.
    assert (request.status, request.needs_approval) == ("approved", False)
    application = RuleApplication.objects.get()
    assert (application.rule, application.request, application.count) == (redirected, request, 1)
    assert rule_audit(redirected)[-1] == ("rule.applied", "system")


def test_a_request_that_names_its_queue_keeps_it(redirected, personas):
    request = reprocess(personas, ["o-1", "o-2"], target_queue="orders")

    assert request.target_queue == "orders"
    assert not RuleApplication.objects.exists()


def test_a_request_on_messages_of_other_queues_is_not_redirected(redirected, personas):
    assert reprocess(personas, ["p-1"]).target_queue == ""
    assert not RuleApplication.objects.exists()


def test_a_fail_is_no_reprocess_and_goes_nowhere(redirected, personas):
    request = action_request_create(
        actor=personas["operator"],
        scope={"kind": "message", "id": "o-1"},
        action=Action(kind="fail"),
        comment="gone for good",
    )

    assert request.target_queue == ""
    assert not RuleApplication.objects.exists()


def test_a_reprocess_of_several_queues_is_refused_in_words(redirected, personas):
    with pytest.raises(ValidationError, match="sends every reprocess of orders to orders-v2"):
        reprocess(personas, ["o-1", "p-1"])


@pytest.mark.parametrize("taken", ["message", "group"])
def test_it_never_sends_on_a_message_someone_investigates(redirected, quarantine, personas, taken):
    if taken == "message":
        quarantine.investigate("o-2")
    else:
        quarantine.investigate_group(GROUP_ID)

    with pytest.raises(ValidationError, match="never a message someone investigates"):
        reprocess(personas, ["o-1", "o-2"])
    # Named, the queue is the person's own decision.
    assert reprocess(personas, ["o-1", "o-2"], target_queue="orders").target_queue == "orders"
    assert not RuleApplication.objects.exists()


def test_once_removed_reprocesses_go_back_to_their_queue_again(redirected, personas):
    assert reprocess(personas, ["o-1"]).target_queue == "orders-v2"
    rule_remove(actor=personas["admin"], rule=redirected, comment="the old service is back")

    assert reprocess(personas, ["o-2"]).target_queue == ""
    assert RuleApplication.objects.count() == 1


def test_the_request_forms_say_where_the_reprocess_will_go_before_it_is_made(redirected, personas):
    client = login(personas["operator"])
    said = f"standing rule {redirected.id} (redirect redirect-rule) sends every reprocess"
    rule_url = reverse("rule-detail", args=[redirected.id])

    full = client.get(reverse("request-new") + "?scope=selection&ids=o-1").content.decode()
    quick = client.get(
        reverse("request-quick") + f"?action=reprocess&scope=group&group={GROUP_ID}"
    ).content.decode()
    elsewhere = client.get(reverse("request-new") + "?scope=selection&ids=p-1").content.decode()

    for page in (full, quick):
        assert said in page and f'href="{rule_url}"' in page
    assert said not in elsewhere


def test_the_request_page_and_the_api_name_the_redirect(redirected, personas):
    request = reprocess(personas, ["o-1"])

    page = login(personas["viewer"]).get(reverse("request-detail", args=[request.id]))
    answer = api(personas["operator"]).post(
        "/api/v1/requests",
        {"scope": {"kind": "message", "id": "o-2"}, "action": "reprocess", "comment": "fixed"},
        format="json",
    )

    said = f"Sent to orders-v2 rather than back to orders by standing rule {redirected.id}"
    assert said in page.content.decode()
    assert answer.status_code == 201, answer.content
    assert answer.json()["target_queue"] == "orders-v2"


def test_an_auto_retry_of_a_redirected_queue_is_sent_on_too(
    redirect_and_retry, quarantine, personas
):
    redirect, retry = redirect_and_retry

    application = auto_retry_apply(rule=retry, now=quarantine.now)

    request = application.request
    assert (request.action, request.target_queue) == ("reprocess", "orders-v2")
    assert sorted(
        RuleApplication.objects.filter(request=request).values_list("rule", flat=True)
    ) == [
        redirect.id,
        retry.id,
    ]
    said = login(personas["viewer"]).get(reverse("request-detail", args=[request.id])).content
    assert f"Made by standing rule {retry.id}".encode() in said
    assert f"rather than back to orders by standing rule {redirect.id}".encode() in said


def test_a_redirect_whose_approver_lost_the_right_sends_nothing_on_and_stops(redirected, personas):
    personas["approver"].groups.clear()

    assert reprocess(personas, ["o-1"]).target_queue == ""
    rules_retry_task()

    assert reloaded(redirected).status == "stopped"
    assert not RuleApplication.objects.exists()


def test_an_auto_retry_refused_its_request_says_why_on_its_page(
    redirect_and_retry, quarantine, personas
):
    redirect, retry = redirect_and_retry
    Queue.objects.filter(name="orders-v2").delete()

    assert auto_retry_apply(rule=retry, now=quarantine.now) is None

    said = reloaded(retry).last_check["error"]
    assert said == (
        f"standing rule {redirect.id} (redirect redirect-rule) sends every reprocess of orders "
        "to orders-v2, which is no longer a queue: name the queue to reprocess in, or remove "
        "the rule"
    )
    page = login(personas["viewer"]).get(reverse("rule-detail", args=[retry.id])).content
    assert b"its request was refused: standing rule" in page
