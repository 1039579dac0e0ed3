"""A queue's policy, a relapse and a message's numbers said in sentences (console.queues.
policy_words, console.browse.message_words): pure functions, fed plain values."""

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from console.browse import message_words as M
from console.queues import policy_words as W
from workers.engine.policy import policy_from_mapping


def _policy(**fields):
    return policy_from_mapping(
        {"name": "orders", "handler": "workers.demo.handlers.noop", **fields}
    )


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(0, "no time"), (45, "45 s"), (60, "1 min"), (300, "5 min"), (5400, "1 h 30 min"),
     (86400, "1 day"), (90061, "1 day 1 h")],
)  # fmt: skip
def test_a_duration_is_said_in_its_two_largest_units(seconds, said):
    assert W.duration(seconds) == said


def test_the_default_policy_quarantines_after_five_failed_attempts():
    assert W.exception_words(_policy()) == "after 5 failed attempts, quarantine"


def test_an_exception_queue_is_named():
    policy = _policy(max_failed_deliveries=3, exception_destination="queue:orders.later")

    assert W.exception_words(policy) == "after 3 failed attempts, move it to queue orders.later"


def test_no_exception_destination_says_it_keeps_trying_and_how_often():
    policy = _policy(exception_destination="none", blocked_retry_timeout=120)

    assert W.exception_words(policy) == (
        "after 5 failed attempts, keep it in its queue and try it again every 2 min, "
        "without ever quarantining it"
    )


def test_no_limit_says_so():
    assert W.exception_words(_policy(max_failed_deliveries=0)).startswith("no limit")


def test_the_pmdf_backoff_example_reads_as_semantics_says_it():
    policy = _policy(backoff_every=5, backoff_delays=[300, 600], periodic_interval=900)

    assert W.backoff_words(policy) == (
        "waits 5 min after attempts 1\N{EN DASH}5, then 10 min after attempts 6\N{EN DASH}10, "
        "then until the next periodic run (every 15 min)"
    )


def test_a_backoff_of_one_attempt_a_step_names_single_attempts():
    policy = _policy(backoff_every=1, backoff_delays=[60, 300])

    assert W.backoff_words(policy).startswith(
        "waits 1 min after attempt 1, then 5 min after attempt 2"
    )


def test_an_empty_delay_table_waits_for_the_periodic_run():
    policy = _policy(backoff_delays=[], periodic_interval=3600)

    assert W.backoff_words(policy) == (
        "after a failed attempt, waits until the next periodic run (every 1 h)"
    )


def test_permanent_failures_are_said_for_both_choices():
    assert "quarantined at once" in W.permanent_words(_policy())
    returned = W.permanent_words(_policy(on_permanent="return_to_sender"))
    assert "ended with an error and its sender told" in returned


def test_disabling_is_said_with_its_count_or_never():
    assert W.disable_words(_policy()) == "never disables itself"
    assert W.disable_words(_policy(disable_after=3)).startswith(
        "disables itself after 3 failed attempts in a row"
    )


def test_the_poison_match_is_said():
    assert "whose id is on the poison list" in W.poison_words(_policy())
    assert "whose id or body" in W.poison_words(_policy(poison_match="id_or_body"))


def test_the_whole_policy_is_said_with_no_field_name():
    said = " ".join(sentence for _, sentence in W.policy_sentences(_policy(disable_after=5)))

    for name in ("max_failed_deliveries", "backoff_every", "on_permanent", "disable_after"):
        assert name not in said
    assert "blacklisted" in said  # crash blacklisting, though not a setting


T = datetime(2026, 11, 27, 9, 12, 3, tzinfo=UTC)


def _entry(action, at, actor="system", **details):
    return SimpleNamespace(action=action, at=at, actor=actor, details=details)


def test_a_queue_that_disabled_itself_right_after_being_enabled_says_so():
    history = [
        _entry("queue.disabled", T, reason="queue disabled: 3 failed attempts in a row"),
        _entry("queue.enabled", T - timedelta(seconds=4), actor="alice"),
    ]

    assert W.relapse_words(W.relapse(history)) == (
        "disabled again by itself at 2026-11-27 09:12:03 UTC, 4 s after alice enabled it: "
        "3 failed attempts in a row"
    )


def test_a_queue_disabled_otherwise_is_no_relapse():
    paused = [_entry("queue.paused", T, actor="bob"), _entry("queue.enabled", T, actor="alice")]
    first = [_entry("queue.disabled", T, reason="x"), _entry("queue.created", T, actor="alice")]

    assert W.relapse(paused) is None
    assert W.relapse(first) is None
    assert W.relapse([]) is None


@pytest.mark.parametrize(
    ("attempt", "count", "said"),
    [
        (1, 0, "delivery attempt 1; no failure so far"),
        (2, 1, "delivery attempt 2; failed once so far"),
        (3, 3, "delivery attempt 3; failed 3 times so far"),
        (0, 0, "no failure so far"),
        (0, 2, "failed twice so far"),
    ],
)
def test_an_events_attempt_and_count_are_said(attempt, count, said):
    assert M.attempt_words(attempt, count) == said


@pytest.mark.parametrize(
    ("state", "candidate", "reason", "shown"),
    [
        ("TBDL", True, "in flight when a worker crashed", True),
        ("DLNG", True, "in flight when a worker crashed", True),
        ("TBDL", True, "fatal error in handler (exit 9); in flight when a worker crashed", True),
        # It failed for a reason of its own since the crash: that reason is the news.
        ("WAIT", True, "inventory service unavailable", False),
        # Quarantined: its reason says why (blacklisted, or something else).
        ("NDLV", True, "blacklisted: in flight during two worker crashes", False),
        ("NDLV", True, "permanent failure: missing field", False),
        ("DLVD", False, "in flight when a worker crashed", False),
        ("TBDL", False, "in flight when a worker crashed", False),
    ],
)
def test_the_candidate_flag_is_shown_only_while_it_means_something(state, candidate, reason, shown):
    assert M.suspected(state=state, candidate=candidate, reason=reason) is shown


def test_batch_mates_are_told_from_the_message_that_crashed():
    assert M.is_batch_mate_reason("in flight when a worker crashed")
    assert not M.is_batch_mate_reason("fatal error in handler; in flight when a worker crashed")
    assert not M.is_batch_mate_reason("maximum failed deliveries reached (5): in flight when ...")
