"""An auto-retry rule on real messages (the decisions' desk, Spark): a failure group's new
failures are reprocessed once the delay has passed, at most K times a message, one request at a
time, in its steps; a step over its re-failure threshold stops the request, and the rule with
it. A message someone investigates is left alone."""

from datetime import timedelta

import pytest
from django.utils import timezone

from console.decisions.tasks import decisions_sweep_task
from console.notes.models import MESSAGE
from console.notes.services import investigation_take
from console.readmodels.models import MessageIndex
from console.rules.applying import auto_retry_apply
from console.rules.candidates import rule_preview
from console.rules.models import RuleRetry
from tests.rules.conftest import reloaded, rule_audit

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DELAY = 60


def failing(desk, rules, n, **rule):
    """n messages of queue orders quarantined at their first failure, every attempt failing,
    after an auto-retry rule of their group was approved (their failures are new ones)."""
    desk.queue(
        "orders", handler="tests.handlers_for_tests.always_transient", max_failed_deliveries=1
    )
    # The group's fingerprint is the refresh's: one message first, failed before the rule.
    (first,) = desk.quarantine("orders", ["x"], prefix="before")
    group = MessageIndex.objects.get(message_id=first).group_id
    retry = rules.active("auto_retry", group=group, delay_seconds=DELAY, **rule)
    desk.now = timezone.now() + timedelta(minutes=5)
    ids = desk.quarantine("orders", ["x"] * n)
    return retry, ids, first


def quarantined_at(message_id):
    return MessageIndex.objects.get(message_id=message_id).updated_at


def retried(desk, request):
    """Carry the rule's request out, deliver what it sent back (it fails again), and index."""
    request = desk.execute(request)
    desk.deliver_until_idle()
    desk.refresh()
    return request


def test_new_failures_are_retried_after_the_delay_at_most_k_times(desk, rules, personas):
    rule, ids, before = failing(desk, rules, 3, max_attempts=2)
    investigation_take(actor=personas["operator"], kind=MESSAGE, target_id=ids[2])
    at = quarantined_at(ids[0])

    assert auto_retry_apply(rule=rule, now=at + timedelta(seconds=DELAY - 1)) is None
    assert rule_preview(rule=rule, now=at + timedelta(seconds=DELAY - 1)).waiting == 3
    first = auto_retry_apply(rule=rule, now=at + timedelta(seconds=DELAY))
    assert (first.request.action, first.request.count, first.left_alone["investigated"]) == (
        "reprocess",
        2,
        1,
    )
    assert retried(desk, first.request).status == "done"

    at = quarantined_at(ids[0])
    assert [desk.index_state(i) for i in ids] == ["NDLV"] * 3
    second = auto_retry_apply(rule=rule, now=at + timedelta(seconds=DELAY))
    assert second.request.count == 2
    retried(desk, second.request)

    at = quarantined_at(ids[0])
    assert auto_retry_apply(rule=rule, now=at + timedelta(seconds=DELAY)) is None
    preview = rule_preview(rule=rule, now=at + timedelta(seconds=DELAY))
    assert (preview.exhausted, preview.investigated, preview.count) == (2, 1, 0)
    assert dict(RuleRetry.objects.values_list("message_id", "attempts")) == {
        ids[0]: 2,
        ids[1]: 2,
    }
    # Each retry is on the messages' history: two reprocesses by the rule's requests.
    reprocessed = [e for e in desk.history(ids[0]) if e["from_state"] == "NDLV"]
    assert [e["run_id"] for e in reprocessed] == [
        f"request:{first.request_id}",
        f"request:{second.request_id}",
    ]
    # The failure from before the rule is not one of its new failures.
    assert desk.index_state(before) == "NDLV"
    assert before not in RuleRetry.objects.values_list("message_id", flat=True)
    assert [a for a, _ in rule_audit(rule)].count("rule.applied") == 2


def test_a_step_over_its_refailure_threshold_stops_the_retry_and_the_rule(desk, rules):
    rule, ids, _ = failing(desk, rules, 3, max_attempts=5, steps=[1], refailure_threshold=0)
    at = quarantined_at(ids[0])
    application = auto_retry_apply(rule=rule, now=at + timedelta(seconds=DELAY))
    request = desk.execute(application.request)
    assert (request.status, request.done, request.steps) == ("canary", 1, [1])

    # One retry at a time: nothing new while its step is watched.
    assert auto_retry_apply(rule=rule, now=at + timedelta(seconds=2 * DELAY)) is None
    desk.deliver_until_idle()
    assert decisions_sweep_task()["canaries"] == {request.id: "failed"}
    desk.refresh()
    assert auto_retry_apply(rule=rule, now=at + timedelta(seconds=3 * DELAY)) is None

    rule = reloaded(rule)
    assert rule.status == "stopped"
    assert rule.end_comment.startswith(f"its retry, request {request.id}, stopped: stopped:")
    assert rule_audit(rule)[-1] == ("rule.stopped", "system")
    assert [desk.index_state(i) for i in ids] == ["NDLV"] * 3
    assert auto_retry_apply(rule=rule, now=at + timedelta(days=1)) is None
    assert [action for action, _ in rule_audit(rule)].count("rule.stopped") == 1
