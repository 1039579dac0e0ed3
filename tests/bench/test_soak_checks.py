"""The soak's invariants (bench/soak_checks.py) on hand-written ledgers: each one passes on what
the product should do and fails, naming the message, on what it must not."""

from bench.soak_checks import (
    INVOICES,
    ORDERS,
    PARKING,
    Facts,
    Planned,
    check_crashers_isolated,
    check_delivered_after_success,
    check_duplicates,
    check_no_success_lost,
    check_nothing_lost,
    check_policies,
)
from bench.soak_handlers import calls_read
from workers.engine import states as S

RUN = "vm:100/run 7"
SWEEPER = "sweeper/vm:200"


def event(to_state, *, queue=ORDERS, actor=RUN, reason=None, candidate=False, from_state=...):
    return {
        "from_state": to_state if from_state is ... else from_state,
        "to_state": to_state,
        "queue": queue,
        "actor": actor,
        "reason": reason,
        "candidate": candidate,
    }


def ingested(queue=ORDERS):
    return event(S.TBDL, queue=queue, actor="api:soak-sender", from_state=None)


def delivered(queue=ORDERS):
    return [ingested(queue), event(S.DLNG, queue=queue), event(S.DLVD, queue=queue)]


def facts(planned, history, calls=None):
    return Facts(
        planned={p.id: p for p in planned},
        accepted={p.id for p in planned},
        history=history,
        calls=calls or {},
    )


def test_a_message_accepted_but_not_in_the_lake_is_lost():
    planned = [Planned("a", ORDERS, "ok"), Planned("b", ORDERS, "ok")]
    check = check_nothing_lost(facts(planned, {"a": delivered()}))

    assert not check.ok
    assert check.examples == ["b"]


def test_a_delivery_with_no_recorded_success_in_its_queue_fails():
    planned = [Planned("a", ORDERS, "ok"), Planned("b", ORDERS, "ok")]
    history = {"a": delivered(), "b": delivered()}
    calls = {"a": [(ORDERS, 1, 0.0)], "b": [(INVOICES, 1, 0.0)]}

    check = check_delivered_after_success(facts(planned, history, calls))

    assert not check.ok
    assert check.examples == ["b"]


def test_a_success_the_product_forgot_is_lost_unless_two_dead_runs_blacklisted_it():
    planned = [Planned(m, ORDERS, "ok") for m in ("forgot", "held-twice")]
    history = {
        "forgot": [ingested(), event(S.DLNG), event(S.NDLV, reason="permanent failure: ?")],
        "held-twice": [
            ingested(),
            event(S.DLNG),
            event(S.TBDL, actor=SWEEPER, reason=S.REASON_CRASH, candidate=True),
            event(S.DLNG, candidate=True),
            event(
                S.NDLV,
                actor=SWEEPER,
                reason=f"{S.REASON_BLACKLISTED} (last: {S.REASON_CRASH})",
                candidate=True,
            ),
        ],
    }
    calls = {m: [(ORDERS, 1, 0.0)] for m in history}

    check = check_no_success_lost(facts(planned, history, calls))

    assert not check.ok
    assert check.examples == ["forgot"]
    assert "1 NDLV by R7" in check.detail


def test_a_batch_mate_charged_with_a_crash_or_quarantined_for_it_fails_isolation():
    planned = [Planned("crasher", ORDERS, "c"), Planned("mate", ORDERS, "ok")]
    blacklisted = f"{S.REASON_BLACKLISTED} (last: {S.REASON_FATAL})"
    history = {
        "crasher": [ingested(), event(S.DLNG), event(S.NDLV, reason=blacklisted)],
        "mate": [
            ingested(),
            event(S.DLNG),
            event(S.TBDL, reason=S.REASON_FATAL, candidate=True),
            event(S.DLNG, candidate=True),
            event(S.NDLV, reason=blacklisted, candidate=True),
        ],
    }

    check = check_crashers_isolated(facts(planned, history))

    assert not check.ok
    assert check.examples == ["mate"]
    assert "1 of 1 crashers blacklisted" in check.detail


def test_a_crasher_that_is_not_blacklisted_fails_isolation():
    planned = [Planned("crasher", ORDERS, "c")]
    history = {"crasher": [ingested(), event(S.DLNG), event(S.TBDL, candidate=True)]}

    assert not check_crashers_isolated(facts(planned, history)).ok


def test_each_failure_ends_where_its_queues_policy_sends_it():
    planned = [
        Planned("moved", INVOICES, "t"),
        Planned("returned", INVOICES, "p"),
        Planned("kept", ORDERS, "p"),
        Planned("wrong", INVOICES, "p"),
    ]
    history = {
        "moved": delivered(INVOICES)[:2] + delivered(PARKING)[1:],
        "returned": [
            ingested(INVOICES),
            event(S.ENDED, queue=INVOICES, reason=f"{S.REASON_RETURNED}: permanent failure: x"),
        ],
        "kept": [ingested(), event(S.NDLV, reason=f"{S.REASON_PERMANENT}: x")],
        "wrong": [ingested(INVOICES), event(S.NDLV, queue=INVOICES, reason=S.REASON_PERMANENT)],
    }

    check = check_policies(facts(planned, history))

    assert not check.ok
    assert check.examples == ["wrong"]


def test_a_second_success_is_at_least_once_only_after_a_run_died():
    planned = [Planned("after-kill", ORDERS, "ok"), Planned("twice", ORDERS, "ok")]
    history = {
        "after-kill": [
            ingested(),
            event(S.DLNG),
            event(S.TBDL, actor=SWEEPER, reason=S.REASON_CRASH, candidate=True),
            event(S.DLNG, candidate=True),
            event(S.DLVD, candidate=True),
        ],
        "twice": delivered(),
    }
    calls = {m: [(ORDERS, 1, 0.0), (ORDERS, 2, 1.0)] for m in history}

    check = check_duplicates(facts(planned, history, calls))

    assert not check.ok
    assert check.examples == ["twice"]


def test_the_success_records_are_read_back_whole_lines_only(tmp_path):
    (tmp_path / "41.calls").write_text("a soak-orders 1 41 10.5\nb soak-orders 2 41 11.0\n")
    (tmp_path / "42.calls").write_text("a soak-orders 2 42 12.0\nc soak-or")

    assert calls_read(tmp_path) == {
        "a": [("soak-orders", 1, 10.5), ("soak-orders", 2, 12.0)],
        "b": [("soak-orders", 2, 11.0)],
    }
