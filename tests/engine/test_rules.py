"""The poison rules as pure functions, checked without Spark, Django or a clock."""

from datetime import timedelta

import pytest

from tests.engine.rows import T0, rule_policy, rule_row
from workers.engine import rules
from workers.engine import states as S
from workers.engine.policy import PolicyError


def _fail(row, policy, at=T0):
    return rules.failed_transiently(row, policy, at=at, actor="w", run_id="r", reason="down")


def test_pmdf_backoff_waits_five_then_ten_minutes_then_for_the_periodic_run():
    policy = rule_policy(
        backoff_every=5, backoff_delays=[300, 600], periodic_interval=3600, max_failed_deliveries=0
    )
    waits = []
    for attempts_before in range(12):
        (ev,) = _fail(rule_row(delivery_count=attempts_before), policy)
        assert ev["to_state"] == S.WAIT
        waits.append(ev["next_attempt_at"] - T0)
    assert waits[:5] == [timedelta(seconds=300)] * 5
    assert waits[5:10] == [timedelta(seconds=600)] * 5
    # Later attempts wait for the next periodic run: the next whole hour after 12:00:00.
    assert waits[10:] == [timedelta(hours=1)] * 2


def test_the_periodic_run_is_the_next_boundary_after_the_failure():
    at = T0 + timedelta(minutes=17, seconds=3)
    assert rules.next_periodic_run(at, 900) == T0 + timedelta(minutes=30)


def test_a_failure_that_reaches_max_failed_deliveries_quarantines():
    policy = rule_policy(max_failed_deliveries=5)
    (ev,) = _fail(rule_row(delivery_count=3), policy)
    assert (ev["to_state"], ev["delivery_count"]) == (S.WAIT, 4)
    (ev,) = _fail(rule_row(delivery_count=4), policy)
    assert (ev["to_state"], ev["delivery_count"]) == (S.NDLV, 5)
    assert ev["reason"] == "maximum failed deliveries reached (5): down"


def test_max_failed_deliveries_zero_means_no_limit():
    (ev,) = _fail(rule_row(delivery_count=500), rule_policy(max_failed_deliveries=0))
    assert ev["to_state"] == S.WAIT


def test_exception_destination_queue_moves_it_as_a_new_tbdl_keeping_its_id():
    policy = rule_policy(max_failed_deliveries=2, exception_destination="queue:orders.dlq")
    (ev,) = _fail(rule_row(delivery_count=1, candidate=True, batch_limit=4), policy)
    assert ev["to_state"] == S.TBDL
    assert (ev["message_id"], ev["queue"], ev["delivery_count"]) == ("m1", "orders.dlq", 0)
    assert ev["candidate"] is False
    assert ev["reason"].endswith("moved to queue orders.dlq")


def test_exception_destination_none_retries_after_the_blocked_retry_timeout_forever():
    policy = rule_policy(
        max_failed_deliveries=2, exception_destination="none", blocked_retry_timeout=45
    )
    for count in (1, 2, 50):
        (ev,) = _fail(rule_row(delivery_count=count), policy)
        assert ev["to_state"] == S.WAIT
        assert ev["next_attempt_at"] == T0 + timedelta(seconds=45)


def test_a_permanent_failure_quarantines_at_once():
    (ev,) = rules.failed_permanently(
        rule_row(), rule_policy(), at=T0, actor="w", run_id="r", reason="missing field: customer"
    )
    assert ev["to_state"] == S.NDLV
    assert ev["reason"] == "permanent failure: missing field: customer"


def test_return_to_sender_ends_it_at_once_through_allowed_transitions():
    events = rules.failed_permanently(
        rule_row(),
        rule_policy(on_permanent="return_to_sender"),
        at=T0,
        actor="w",
        run_id="r",
        reason="unknown currency",
    )
    assert [(e["from_state"], e["to_state"]) for e in events] == [
        (S.DLNG, S.NDLV),
        (S.NDLV, S.ENDED),
    ]


def test_a_first_crash_flags_the_message_and_halves_its_batch():
    (ev,) = rules.crashed(
        rule_row(), at=T0, actor="w", run_id="r", batch_size=1000, in_flight=False
    )
    assert (ev["to_state"], ev["candidate"], ev["batch_limit"]) == (S.TBDL, True, 500)
    assert ev["delivery_count"] == 1
    assert ev["reason"] == S.REASON_CRASH


@pytest.mark.parametrize(
    ("batch_size", "detail", "after", "reason"),
    [
        pytest.param(
            500,
            "exit 70",
            (S.TBDL, 250),
            "fatal error in handler (exit 70)",
            id="in_a_larger_batch_it_is_only_batched_smaller",
        ),
        pytest.param(1, None, (S.NDLV, 1), S.REASON_BLACKLISTED, id="alone_it_is_blacklisted"),
    ],
)
def test_a_candidate_that_crashes_again_is_batched_smaller_until_it_crashes_alone(
    batch_size, detail, after, reason
):
    (ev,) = rules.crashed(
        rule_row(candidate=True, batch_limit=batch_size),
        at=T0,
        actor="w",
        run_id="r",
        batch_size=batch_size,
        in_flight=True,
        detail=detail,
    )
    assert (ev["to_state"], ev["batch_limit"]) == after
    assert ev["reason"].startswith(reason)


def test_a_due_wait_message_goes_through_tbdl_into_delivery():
    events, current = rules.start_attempt(
        rule_row(state=S.WAIT, next_attempt_at=T0, delivery_count=2),
        at=T0,
        actor="w",
        run_id="r",
    )
    assert [(e["from_state"], e["to_state"]) for e in events] == [
        (S.WAIT, S.TBDL),
        (S.TBDL, S.DLNG),
    ]
    assert events[-1]["attempt"] == 3
    assert current["state"] == S.DLNG


def test_an_event_refuses_a_transition_semantics_does_not_allow():
    with pytest.raises(ValueError, match="not allowed"):
        rules.event(rule_row(state=S.DLVD), S.TBDL, at=T0, actor="w", run_id="r")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("exception_destination", "dead-letter", "exception_destination"),
        ("backoff_every", 0, "backoff_every: must be at least 1"),
        ("backoff_delays", [300, -1], "backoff_delays"),
        ("on_permanent", "drop", "on_permanent"),
        ("poison_match", "body", "poison_match"),
        ("max_failed_deliveries", "5", "max_failed_deliveries: must be an integer"),
        ("surprise", 1, "unknown field"),
    ],
)
def test_a_bad_policy_setting_is_refused_with_its_name(field, value, message):
    with pytest.raises(PolicyError, match=message):
        rule_policy(**{field: value})
