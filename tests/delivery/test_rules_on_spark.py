"""One test per rule (R1-R11, R14), each running the real delivery job on local Spark, and the
same run without Spark (a small run, delivered in the worker's process: delivery_local)."""

import hashlib
import math
from datetime import timedelta

import pytest

from console.audit.models import AuditEntry
from console.delivery.models import PoisonEntry
from console.lake.selectors import lake_paths
from console.lake.services import lake
from console.queues.models import Queue
from tests.delivery.conftest import both_paths
from workers.engine import states as S

pytestmark = [pytest.mark.spark, both_paths]


def test_r1_a_new_message_is_tbdl_and_a_successful_attempt_delivers_it(engine):
    engine.queue()
    (mid,) = engine.ingest("orders", ["ok"])
    assert engine.state(mid)["state"] == S.TBDL
    run = engine.deliver()
    assert run.outcomes["states"] == {S.DLVD: 1}
    assert engine.transitions(mid) == [(None, S.TBDL), (S.TBDL, S.DLNG), (S.DLNG, S.DLVD)]


def test_r2_each_failed_attempt_adds_one_to_the_delivery_count(engine):
    engine.queue(max_failed_deliveries=0)
    (mid,) = engine.ingest("orders", ["transient"])
    for expected in (1, 2, 3):
        engine.deliver()
        state = engine.state(mid)
        assert (state["state"], state["delivery_count"]) == (S.WAIT, expected)
        engine.now = state["next_attempt_at"]


def test_r3_the_failure_that_reaches_max_failed_deliveries_quarantines(engine):
    engine.queue(max_failed_deliveries=3, backoff_delays=[10])
    (mid,) = engine.ingest("orders", ["transient"])
    engine.deliver_until_idle()
    state = engine.state(mid)
    assert (state["state"], state["delivery_count"]) == (S.NDLV, 3)
    assert state["reason"] == "maximum failed deliveries reached (3): inventory service unavailable"
    assert state["exception_type"] == "ConnectionError"


def test_r4_the_exception_queue_takes_the_message_with_its_id_and_history(engine):
    engine.queue("orders.dlq", handler="tests.handlers_for_tests.always_ok")
    engine.queue(max_failed_deliveries=2, exception_destination="queue:orders.dlq")
    (mid,) = engine.ingest("orders", ["transient"])
    engine.deliver_until_idle()
    state = engine.state(mid)
    assert (state["state"], state["queue"], state["original_queue"]) == (
        S.DLVD,
        "orders.dlq",
        "orders",
    )
    assert [e["queue"] for e in engine.history(mid)][-2:] == ["orders.dlq", "orders.dlq"]
    assert len(engine.history(mid)) == 8  # ingest, 2 attempts (with a retry), the move, delivery


def test_r4_exception_destination_none_keeps_retrying_and_never_quarantines(engine):
    engine.queue(
        max_failed_deliveries=2,
        exception_destination="none",
        blocked_retry_timeout=30,
        backoff_delays=[5],
    )
    (mid,) = engine.ingest("orders", ["transient"])
    (other,) = engine.ingest("orders", ["ok"], prefix="fine")
    for _ in range(5):
        engine.deliver()
        engine.later(seconds=30)
    state = engine.state(mid)
    assert state["state"] == S.WAIT
    assert state["delivery_count"] == 5
    assert state["next_attempt_at"] - engine.history(mid)[-1]["at"] == timedelta(seconds=30)
    # It blocks nothing else in its queue.
    assert engine.state(other)["state"] == S.DLVD


def test_r5_pmdf_backoff_schedule_without_sleeping(engine):
    engine.queue(
        max_failed_deliveries=0, backoff_every=5, backoff_delays=[300, 600], periodic_interval=3600
    )
    (mid,) = engine.ingest("orders", ["transient"])
    engine.now = engine.now.replace(minute=7)  # 12:07, off the hour
    waits = []
    for _ in range(12):
        engine.deliver()
        state = engine.state(mid)
        waits.append(state["next_attempt_at"] - engine.now)
        engine.now = state["next_attempt_at"]
    assert waits[:5] == [timedelta(seconds=300)] * 5
    assert waits[5:10] == [timedelta(seconds=600)] * 5
    # Attempt 11 fails at 13:07 (12:07 + 5 * 5 min + 5 * 10 min + ...): next periodic run 14:00.
    assert engine.history(mid)[-1]["next_attempt_at"].minute == 0
    assert all(w <= timedelta(seconds=3600) for w in waits[10:])
    assert all(w.total_seconds() % 60 == 0 for w in waits)


def test_r6_a_permanent_failure_is_quarantined_at_once(engine):
    engine.queue()
    (mid,) = engine.ingest("orders", ["permanent"])
    engine.deliver()
    state = engine.state(mid)
    assert (state["state"], state["delivery_count"]) == (S.NDLV, 1)
    assert state["reason"] == "permanent failure: missing field: customer"


def test_r6_return_to_sender_ends_the_conversation_and_notifies_the_sender(engine):
    engine.queue("payments", on_permanent="return_to_sender")
    engine.queue("payments.slow", handler="tests.handlers_for_tests.always_transient")
    engine.ingest(
        "payments", {"pay-1": "permanent"}, conversation_id="conv-9", sender="shop@example.test"
    )
    engine.ingest(
        "payments.slow", {"pay-2": "ok"}, conversation_id="conv-9", sender="shop@example.test"
    )
    engine.ingest("payments", {"pay-3": "ok"}, conversation_id="conv-other")
    engine.deliver(queues=["payments.slow"])
    assert engine.state("pay-2")["state"] == S.WAIT
    engine.deliver(queues=["payments"])
    assert engine.transitions("pay-1")[-2:] == [(S.DLNG, S.NDLV), (S.NDLV, S.ENDED)]
    assert engine.state("pay-2")["state"] == S.ENDED
    assert engine.state("pay-2")["reason"] == "conversation ended with an error (message pay-1)"
    assert engine.state("pay-3")["state"] == S.DLVD
    notes = lake().read_arrow("notifications", lake_paths(dataset="notifications")).to_pylist()
    assert [(n["message_id"], n["conversation_id"], n["sender"], n["code"]) for n in notes] == [
        ("pay-1", "conv-9", "shop@example.test", "permanent-failure")
    ]
    assert not PoisonEntry.objects.filter(message_id="pay-1").exists()


def test_r7_a_crash_flags_the_message_and_a_second_crash_blacklists_it(engine):
    engine.queue()
    (mid,) = engine.ingest("orders", ["crash"])
    engine.deliver()
    state = engine.state(mid)
    assert (state["state"], state["blacklist_candidate"], state["delivery_count"]) == (
        S.TBDL,
        True,
        1,
    )
    engine.deliver()
    state = engine.state(mid)
    assert state["state"] == S.NDLV
    assert state["reason"].startswith("blacklisted: in flight during two worker crashes")
    assert state["delivery_count"] == 2


def _one_crasher_delivered_in_one_batch(engine, settings, *, count, crasher, max_failed_deliveries):
    """`count` messages ingested into orders, the one at `crasher` crashing its handler's
    process, the others succeeding, delivered by one partition until nothing is due, starting
    with one batch of them all. Their ids."""
    settings.DELIVERY_BATCH_SIZE = count
    engine.queue(max_failed_deliveries=max_failed_deliveries)
    bodies = ["ok"] * count
    bodies[crasher] = "crash"
    ids = engine.ingest("orders", bodies)
    engine.deliver_until_idle(partitions=1)
    return ids


def test_r8_one_crashing_message_in_a_thousand_is_isolated_by_halving(engine, settings):
    ids = _one_crasher_delivered_in_one_batch(
        engine, settings, count=1000, crasher=613, max_failed_deliveries=0
    )
    working_runs = [r for r in engine.runs if r.claimed]
    extra_runs = len(working_runs) - 1
    states = {}
    for mid in ids:
        states.setdefault(engine.state(mid)["state"], []).append(mid)
    assert states[S.NDLV] == [ids[613]]
    assert len(states[S.DLVD]) == 999
    assert engine.state(ids[613])["reason"].startswith(S.REASON_BLACKLISTED)
    assert extra_runs <= math.log2(1000) + 2


def test_r2_a_crash_is_charged_to_the_message_that_crashed_not_to_its_batch_mates(engine, settings):
    ids = _one_crasher_delivered_in_one_batch(
        engine, settings, count=200, crasher=117, max_failed_deliveries=5
    )

    crasher = engine.state(ids[117])
    attempts = [t for t in engine.transitions(ids[117]) if t == (S.TBDL, S.DLNG)]
    # Its handler ran, and crashed, once in every batch that held it: 200, 100, 50, 25, 12, 6,
    # 3, then alone: the second strike.
    assert len(attempts) == 8
    assert (crasher["state"], crasher["delivery_count"]) == (S.NDLV, len(attempts))
    assert crasher["reason"].startswith(S.REASON_BLACKLISTED)
    others = [engine.state(mid) for i, mid in enumerate(ids) if i != 117]
    # Their handlers never failed: no count, and delivered means no longer suspected.
    assert {(s["state"], s["delivery_count"], s["blacklist_candidate"]) for s in others} == {
        (S.DLVD, 0, False)
    }
    # Those queued behind the crasher in its batch were flagged on the way (R8), not charged.
    assert any(e["candidate"] and e["delivery_count"] == 0 for e in engine.history(ids[118]))


def test_r9_a_message_on_the_poison_list_is_quarantined_without_calling_its_handler(
    engine, tmp_path
):
    engine.queue(handler="tests.handlers_for_tests.calls_recorded")
    headers = {"record-to": str(tmp_path)}
    engine.ingest("orders", {"known-bad": "x"}, headers=headers)
    PoisonEntry.objects.create(
        message_id="known-bad", reason="crashed the billing app", source="billing"
    )
    engine.deliver()
    state = engine.state("known-bad")
    assert state["state"] == S.NDLV
    assert state["reason"] == "on the poison list: crashed the billing app"
    assert state["delivery_count"] == 0
    assert not (tmp_path / "known-bad").exists()


def test_r9_poison_match_id_or_body_also_catches_the_same_body_under_another_id(engine):
    engine.queue()
    engine.queue("orders.strict", poison_match="id_or_body")
    engine.ingest("orders", {"first": "permanent"})
    engine.deliver()
    entry = PoisonEntry.objects.get(message_id="first")
    assert entry.body_sha256 == hashlib.sha256(b"permanent").hexdigest()
    assert entry.reason == "permanent failure: missing field: customer"
    engine.ingest("orders.strict", {"copy": "permanent"})
    engine.ingest("orders", {"copy-lenient": "permanent"})
    engine.deliver()
    assert engine.state("copy")["reason"].startswith("on the poison list: same body as")
    assert engine.state("copy")["delivery_count"] == 0
    # poison_match "id" (the default) looks at ids only: this one was attempted.
    assert engine.state("copy-lenient")["delivery_count"] == 1


def test_r10_a_handler_that_ends_its_process_is_a_fatal_error(engine):
    engine.queue()
    (mid,) = engine.ingest("orders", ["crash"])
    engine.deliver()
    crash = engine.history(mid)[-1]
    assert crash["reason"] == (
        "fatal error in handler (process exited with code 70); in flight when a worker crashed"
    )


def test_r11_a_queue_is_disabled_after_that_many_failures_in_a_row(engine):
    engine.queue("invoices", handler="tests.handlers_for_tests.always_transient", disable_after=5)
    engine.queue()
    ids = engine.ingest("invoices", ["x"] * 12)
    (other,) = engine.ingest("orders", ["ok"])
    run = engine.deliver()
    queue = Queue.objects.get(name="invoices")
    assert not queue.enabled
    assert queue.disabled_reason == "queue disabled: 5 failed attempts in a row"
    assert run.outcomes["disabled"] == {"invoices": queue.disabled_reason}
    alert = AuditEntry.objects.get(action="queue.disabled")
    assert (alert.actor, alert.target_id) == ("system", "invoices")
    states = [engine.state(m)["state"] for m in ids]
    assert states.count(S.WAIT) == 5
    assert states.count(S.TBDL) == 7  # delivery stopped for the rest of the queue
    assert engine.state(other)["state"] == S.DLVD  # other queues go on
    engine.later(days=1)
    assert engine.deliver().claimed == 0


def test_r11_a_success_resets_the_streak(engine):
    engine.queue(
        handler="tests.handlers_for_tests.sequence", disable_after=3, max_failed_deliveries=0
    )
    engine.ingest("orders", ["t", "t", "ok", "t", "t", "ok"])
    engine.deliver(partitions=1)
    queue = Queue.objects.get(name="orders")
    assert queue.enabled
    assert queue.consecutive_failures == 0


def test_r14_every_message_accepted_is_accounted_for_in_the_lake(engine):
    engine.queue(max_failed_deliveries=2, backoff_delays=[1])
    ids = engine.ingest("orders", ["ok", "transient", "permanent", "crash"] * 5)
    engine.deliver_until_idle()
    states = {m: engine.state(m)["state"] for m in ids}
    assert set(states.values()) <= {S.DLVD, S.NDLV}
    assert sum(1 for s in states.values() if s == S.DLVD) == 5
    assert sum(1 for s in states.values() if s == S.NDLV) == 15
    ledger = lake().read_arrow("events", lake_paths(dataset="events"), columns=["message_id"])
    assert set(ledger.column(0).to_pylist()) == set(ids)
    assert PoisonEntry.objects.count() == 15


def test_r8_a_crash_takes_down_messages_of_its_own_queue_only(engine):
    engine.queue(max_failed_deliveries=0)
    engine.queue("shipping", handler="tests.handlers_for_tests.always_ok")
    engine.ingest("orders", ["crash"])
    others = engine.ingest("shipping", ["ok"] * 20)
    engine.deliver(partitions=1)
    assert all(engine.state(m)["state"] == S.DLVD for m in others)
    assert not any(engine.state(m)["blacklist_candidate"] for m in others)
