"""The decisions job's table work (workers.jobs.decisions) on hand-written rows: the plan of a
small set, one chunk's decision events, the canary's verdict, an edited body's new version. No
Django, no files; the plan's Spark twin runs on the shared session."""

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workers.engine import actions as A
from workers.jobs.conversations import CONVERSATION_STEP_BASE
from workers.jobs.decisions.chunk import (
    Decision,
    chunk_message_ids,
    decide_chunk,
    decision_reason,
    edited_message,
    with_missing,
    with_newer,
)
from workers.jobs.decisions.frozen import CHUNK_IDS_SCHEMA
from workers.jobs.decisions.plan import (
    MEMBER_SCHEMA,
    SIBLING_SCHEMA,
    PlanParams,
    latest_by_id,
    plan_members_arrow,
    read_plan_chunk,
    run_plan,
    write_plan_arrow,
)
from workers.jobs.decisions.steps import canary_verdict
from workers.lake.schema import EVENT_SCHEMA, MESSAGE_SCHEMA

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
T1 = T0 + timedelta(hours=1)
CHUNK_3 = 3 << 32  # the first step of chunk 3's decision events


def event(mid, to_state, *, epoch=1, step=0, from_state="DLNG", queue="orders", count=1, **more):
    """A ledger row (every column of the events dataset), as the lake holds it."""
    return {
        "message_id": mid,
        "epoch": epoch,
        "step": step,
        "at": more.pop("at", T0),
        "from_state": from_state,
        "to_state": to_state,
        "queue": queue,
        "attempt": more.pop("attempt", count),
        "delivery_count": count,
        "candidate": more.pop("candidate", False),
        "batch_limit": more.pop("batch_limit", 0),
        "next_attempt_at": more.pop("next_attempt_at", None),
        "body_version": more.pop("body_version", 1),
        "actor": more.pop("actor", "engine"),
        "run_id": more.pop("run_id", "run-1"),
        "reason": more.pop("reason", None),
        "exception_type": more.pop("exception_type", None),
        "stack": more.pop("stack", None),
        "queue_streak": more.pop("queue_streak", None),
        **more,
    }


def events(*rows):
    return pa.Table.from_pylist(list(rows), schema=EVENT_SCHEMA)


def members(*rows):
    return pa.Table.from_pylist(list(rows), schema=MEMBER_SCHEMA)


def siblings(*rows):
    return pa.Table.from_pylist(list(rows), schema=SIBLING_SCHEMA)


def unknown(mid):
    """A frozen id the ledger does not know: with_missing's row of nulls."""
    return {"message_id": mid}


def decision(action, **fields):
    return Decision(
        action=action, request_id=7, epoch=9, actor="operator", reason="fixed", **fields
    )


def decided_by_request(mid, from_state, to_state, *, step, queue="orders", count=0, **more):
    """A decision event of request 7 (epoch 9, at T1), as decide_chunk writes it."""
    return event(
        mid,
        to_state,
        epoch=9,
        step=step,
        at=T1,
        from_state=from_state,
        queue=queue,
        count=count,
        attempt=0,
        actor="operator",
        run_id="request:7",
        reason=more.pop("reason", "fixed"),
        **more,
    )


# --- The plan of a small set --------------------------------------------------------------------

# b: the latest event is the later epoch's, whatever the steps say.
PLAN_LEDGER = [
    event("a", "TBDL", epoch=1, step=0, from_state=None, count=0),
    event("a", "NDLV", epoch=2, step=4, count=5, reason="order gone"),
    event("b", "NDLV", epoch=2, step=1, count=1, candidate=True, batch_limit=2),
    event("b", "TBDL", epoch=1, step=9, from_state=None, count=0),  # an older epoch
    event("c", "WAIT", epoch=3, step=0, count=2, next_attempt_at=T1),
    event("x", "NDLV", epoch=3, step=1),  # not in the frozen set
]
# z: a frozen id the ledger does not know (the chunk step reports it failed).
CHUNK_IDS = {"message_id": ["a", "b", "c", "z"], "chunk": [1, 0, 0, 1]}
PLANNED = {
    0: [
        {"chunk": 0, **event("b", "NDLV", epoch=2, step=1, count=1, candidate=True, batch_limit=2),
         "conversation_id": None, "sender": None},
        {"chunk": 0, **event("c", "WAIT", epoch=3, step=0, count=2, next_attempt_at=T1),
         "conversation_id": None, "sender": None},
    ],
    1: [
        {"chunk": 1, **event("a", "NDLV", epoch=2, step=4, count=5, reason="order gone"),
         "conversation_id": None, "sender": None},
    ],
}  # fmt: skip


def test_the_plan_of_a_small_set_is_each_known_id_with_its_chunk_and_current_state_in_order():
    chunk_ids = pa.table(CHUNK_IDS, schema=CHUNK_IDS_SCHEMA)
    plan = plan_members_arrow(chunk_ids, events(*PLAN_LEDGER))

    assert plan.to_pylist() == [*PLANNED[0], *PLANNED[1]]
    assert plan.column_names == [
        "message_id",
        "chunk",
        *(name for name in EVENT_SCHEMA.names if name != "message_id"),
        "conversation_id",
        "sender",
    ]


@pytest.mark.spark
def test_the_spark_plan_and_the_pyarrow_plan_of_a_small_set_read_back_the_same(spark, tmp_path):
    pq.write_table(pa.table(CHUNK_IDS, schema=CHUNK_IDS_SCHEMA), tmp_path / "chunk-ids.parquet")
    (tmp_path / "events").mkdir()
    pq.write_table(events(*PLAN_LEDGER), tmp_path / "events" / "part-00000.parquet")

    def params(name):
        return PlanParams(
            action=A.REPROCESS,
            chunk_ids_path=str(tmp_path / "chunk-ids.parquet"),
            snapshot_paths=[],
            event_paths=[str(tmp_path / "events")],
            message_paths=[],
            out_dir=str(tmp_path / name),
        )

    run_plan(spark, params("spark"))
    small = params("pyarrow")
    chunk_ids = pq.read_table(small.chunk_ids_path)
    write_plan_arrow(
        plan_members_arrow(chunk_ids, events(*PLAN_LEDGER)), small, row_group_rows=10_000
    )

    for chunk, expected in PLANNED.items():
        without_chunk = [{k: v for k, v in row.items() if k != "chunk"} for row in expected]
        for name in ("spark", "pyarrow"):
            read = read_plan_chunk(f"{tmp_path}/{name}/members", chunk, MEMBER_SCHEMA)
            # Spark sorts each of its files; a chunk may span two of them.
            assert read.sort_by("message_id").to_pylist() == without_chunk, name


# --- One chunk -----------------------------------------------------------------------------------


def test_a_reprocess_puts_the_ndlv_members_back_in_their_queue_reset_and_unflagged():
    chunk = members(
        event("m-2", "NDLV", queue="payments", count=5, body_version=2),
        event("m-1", "NDLV", count=3, candidate=True, batch_limit=2, reason="blacklisted"),
    )
    outcome = decide_chunk(chunk, None, decision(A.REPROCESS), chunk=3, at=T1)

    assert outcome.events.to_pylist() == [
        decided_by_request("m-1", "NDLV", "TBDL", step=CHUNK_3),
        decided_by_request(
            "m-2", "NDLV", "TBDL", step=CHUNK_3 + 1, queue="payments", body_version=2
        ),
    ]
    assert outcome.decided.to_pylist() == [
        {"message_id": "m-1", "from_queue": "orders", "from_state": "NDLV", "queue": "orders",
         "to_state": "TBDL"},
        {"message_id": "m-2", "from_queue": "payments", "from_state": "NDLV",
         "queue": "payments", "to_state": "TBDL"},
    ]  # fmt: skip
    assert (outcome.done, outcome.skipped, outcome.failed, outcome.siblings_ended) == (2, 0, 0, 0)
    assert outcome.notifications.num_rows == 0
    assert outcome.decided_at == T1


def test_a_reprocess_to_another_queue_with_an_edited_body_moves_it_and_reads_the_new_version():
    chunk = members(event("m-1", "NDLV", count=5))
    ask = decision(A.REPROCESS, target_queue="orders-retry", body_version=2)
    outcome = decide_chunk(chunk, None, ask, chunk=0, at=T1)

    assert outcome.events.to_pylist() == [
        decided_by_request("m-1", "NDLV", "TBDL", step=0, queue="orders-retry", body_version=2)
    ]
    assert outcome.decided.to_pylist() == [
        {"message_id": "m-1", "from_queue": "orders", "from_state": "NDLV",
         "queue": "orders-retry", "to_state": "TBDL"},
    ]  # fmt: skip


def test_fail_keeps_the_count_and_flags_as_they_were():
    chunk = members(event("m-1", "NDLV", count=5, candidate=True, batch_limit=4))
    outcome = decide_chunk(chunk, None, decision(A.FAIL), chunk=3, at=T1)

    assert outcome.events.to_pylist() == [
        decided_by_request(
            "m-1", "NDLV", "FAIL", step=CHUNK_3, count=5, candidate=True, batch_limit=4
        )
    ]


def test_a_member_no_longer_ndlv_is_skipped_and_one_the_ledger_does_not_know_fails():
    chunk = members(event("m-1", "NDLV"), event("m-2", "TBDL", from_state="NDLV"), unknown("m-3"))
    outcome = decide_chunk(chunk, None, decision(A.FAIL), chunk=0, at=T1)

    assert [e["message_id"] for e in outcome.events.to_pylist()] == ["m-1"]
    assert (outcome.done, outcome.skipped, outcome.failed) == (1, 1, 1)
    assert outcome.skipped_ids == ["m-2"]


def test_an_end_with_error_notifies_the_senders_and_ends_the_open_siblings_of_this_chunk():
    chunk = members(
        {**event("m-1", "NDLV", count=2), "conversation_id": "c-1", "sender": "shop-7"},
        {**event("m-2", "NDLV"), "conversation_id": None, "sender": None},
    )
    others = siblings(
        {**event("s-1", "WAIT", count=1, next_attempt_at=T1, queue="shipping"), "ended_by": "m-1"},
        {**event("s-2", "DLVD", count=1), "ended_by": "m-1"},  # delivered since the plan
        {**event("s-3", "TBDL", count=0), "ended_by": "m-9"},  # another chunk's conversation
    )
    ask = decision(A.END, error_code="E42", error_description="customer unknown")
    outcome = decide_chunk(chunk, others, ask, chunk=3, at=T1)

    assert outcome.events.to_pylist() == [
        decided_by_request("m-1", "NDLV", "ENDED", step=CHUNK_3, count=2),
        decided_by_request("m-2", "NDLV", "ENDED", step=CHUNK_3 + 1, count=1),
        decided_by_request(
            "s-1",
            "WAIT",
            "ENDED",
            step=CONVERSATION_STEP_BASE + CHUNK_3,
            queue="shipping",
            count=1,
            reason="conversation ended with an error (message m-1)",
        ),
    ]
    assert outcome.notifications.to_pylist() == [
        {"message_id": "m-1", "conversation_id": "c-1", "sender": "shop-7", "code": "E42",
         "description": "customer unknown", "at": T1, "run_id": "request:7"},
        {"message_id": "m-2", "conversation_id": None, "sender": None, "code": "E42",
         "description": "customer unknown", "at": T1, "run_id": "request:7"},
    ]  # fmt: skip
    assert outcome.decided.to_pylist()[2] == {
        "message_id": "s-1",
        "from_queue": "shipping",
        "from_state": "WAIT",
        "queue": "shipping",
        "to_state": "ENDED",
    }
    assert (outcome.done, outcome.siblings_ended) == (2, 1)


def test_with_missing_adds_a_row_of_nulls_for_each_id_the_ledger_does_not_know():
    chunk = members(event("m-1", "NDLV"))
    ids = pa.table({"message_id": ["m-1", "m-2"]})
    completed = with_missing(chunk, ids)

    assert completed.column("message_id").to_pylist() == ["m-1", "m-2"]
    assert completed.column("to_state").to_pylist() == ["NDLV", None]
    assert completed.schema == MEMBER_SCHEMA


def test_with_newer_replaces_the_planned_state_of_a_message_that_changed_since_the_plan():
    plan = siblings(
        {**event("s-1", "WAIT", count=1), "ended_by": "m-1"},
        {**event("s-2", "TBDL", count=0), "ended_by": "m-1"},
    )
    newer = events(
        event("s-1", "DLNG", epoch=4, step=1, from_state="WAIT", count=1),
        event("s-1", "DLVD", epoch=4, step=2, count=1),
        event("x-9", "NDLV", epoch=4, step=3),  # not in the plan
    )
    fresh = with_newer(plan, newer).sort_by("message_id")

    assert fresh.to_pylist() == [
        {**event("s-1", "DLVD", epoch=4, step=2, count=1), "ended_by": "m-1"},
        {**event("s-2", "TBDL", count=0), "ended_by": "m-1"},
    ]


def test_latest_by_id_orders_by_epoch_then_step():
    ledger = events(
        event("b", "DLNG", epoch=2, step=9),
        event("a", "TBDL", epoch=3, step=0, from_state=None),
        event("b", "NDLV", epoch=3, step=1),
        event("a", "DLNG", epoch=2, step=5),
    )
    latest = latest_by_id(ledger)

    assert [(r["message_id"], r["to_state"]) for r in latest.to_pylist()] == [
        ("a", "TBDL"),
        ("b", "NDLV"),
    ]


def test_a_chunk_looks_for_newer_events_of_its_members_and_of_its_siblings():
    chunk = members(event("m-1", "NDLV"), unknown("m-2"))
    others = siblings({**event("s-1", "WAIT"), "ended_by": "m-1"})

    assert chunk_message_ids(chunk, others).to_pylist() == ["m-1", "m-2", "s-1"]
    assert chunk_message_ids(chunk, None).to_pylist() == ["m-1", "m-2"]


# --- The reason the ledger records ---------------------------------------------------------------


def test_the_reason_says_what_was_done_by_which_request_who_approved_it_and_why():
    reason = decision_reason(action=A.END, request_id=7, approver="ann", comment="bad order")
    assert reason == "ended with an error (request 7, approved by ann): bad order"


def test_the_reason_of_a_request_nobody_had_to_approve_names_the_request_only():
    reason = decision_reason(action=A.REPROCESS, request_id=8, approver=None, comment="fixed")
    assert reason == "reprocessed (request 8): fixed"


def test_the_reason_is_cut_to_what_the_ledger_keeps():
    reason = decision_reason(action=A.FAIL, request_id=9, approver=None, comment="x" * 3000)
    assert len(reason) == 2000
    assert reason.startswith("failed (request 9): xxx")


# --- An edited body ------------------------------------------------------------------------------


def test_an_edited_body_is_the_same_message_with_a_new_version_body_hash_and_size():
    original = pa.Table.from_pylist(
        [
            {
                "message_id": "m-1",
                "version": 1,
                "queue": "orders",
                "body": b"{order: 2}",
                "body_sha256": "not checked here",
                "body_size": 10,
                "content_type": "application/json",
                "headers": '{"x-source": "shop"}',
                "conversation_id": "c-1",
                "sender": "shop-7",
                "enqueued_at": T0,
            }
        ],
        schema=MESSAGE_SCHEMA,
    )
    edited = edited_message(original, b'{"order": 2}', version=2)

    assert edited.to_pylist() == [
        {
            "message_id": "m-1",
            "version": 2,
            "queue": "orders",
            "body": b'{"order": 2}',
            "body_sha256": "e43851f9c77774548ada08b6c10f7b9def8343614a65059407f4938ae9a98e64",
            "body_size": 12,
            "content_type": "application/json",
            "headers": '{"x-source": "shop"}',
            "conversation_id": "c-1",
            "sender": "shop-7",
            "enqueued_at": T0,
            "redrive_target": None,
        }
    ]
    assert edited.schema == MESSAGE_SCHEMA
    # A request's own target travels with the version it writes, never in its headers (R18).
    target = '{"url": "https://orders.example/hooks"}'
    edited = edited_message(original, b"{}", version=2, redrive_target=target)
    assert edited.column("redrive_target").to_pylist() == [target]
    assert edited.column("headers").to_pylist() == ['{"x-source": "shop"}']


# --- The canary ----------------------------------------------------------------------------------

CANARY = pa.array(["m-1", "m-2"])


def attempt(mid, to_state, step, **more):
    """An event of a delivery run after the canary (epoch 12)."""
    from_state = "TBDL" if to_state == "DLNG" else "DLNG"
    return event(mid, to_state, epoch=12, step=step, from_state=from_state, **more)


def test_a_canary_message_that_fails_again_fails_the_canary_and_the_first_failure_says_why():
    later = events(
        attempt("m-1", "DLNG", 1),
        attempt("m-1", "WAIT", 2, reason="inventory service unavailable"),
        attempt("m-2", "DLNG", 3),
        attempt("m-2", "NDLV", 4, reason="permanent failure: no customer"),
    )
    assert canary_verdict(CANARY, later) == (
        "failed",
        "message m-1 failed again: inventory service unavailable",
    )


def test_a_canary_whose_messages_all_reached_a_final_state_passes():
    later = events(
        attempt("m-1", "DLNG", 1),
        attempt("m-1", "DLVD", 2),
        event("m-2", "ENDED", epoch=13, from_state="TBDL", reason="conversation ended"),
    )
    assert canary_verdict(CANARY, later) == ("passed", "all 2 canary message(s) delivered")


def test_a_canary_with_a_message_still_on_its_way_is_pending():
    later = events(attempt("m-1", "DLNG", 1), attempt("m-1", "DLVD", 2), attempt("m-2", "DLNG", 3))
    assert canary_verdict(CANARY, later) == (
        "pending",
        "1 of 2 canary message(s) have an outcome",
    )


def test_a_canary_with_no_events_since_is_pending():
    assert canary_verdict(CANARY, events()) == (
        "pending",
        "0 of 2 canary message(s) have an outcome",
    )


def test_other_messages_failing_after_the_canary_do_not_count():
    later = events(
        attempt("x-1", "DLNG", 1),
        attempt("x-1", "NDLV", 2, reason="not a canary message"),
        attempt("m-1", "DLNG", 3),
        attempt("m-1", "DLVD", 4),
    )
    assert canary_verdict(pa.array(["m-1"]), later) == (
        "passed",
        "all 1 canary message(s) delivered",
    )
