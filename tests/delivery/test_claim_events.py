"""R1: the events that take a run's claims into DLNG, written column-wise before any handler runs,
are the ones rules.start_attempt writes one message at a time."""

from datetime import UTC, datetime, timedelta

import pyarrow as pa

from workers.engine import rules
from workers.engine import states as S
from workers.jobs.delivery import STEP_DUE, STEP_TAKEN, claim_events
from workers.lake.schema import CLAIM_SCHEMA, EVENT_SCHEMA

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
ACTOR = "host-a/run 7"


def claim(message_id, state, *, count=0, candidate=False, limit=0, due=None, queue="orders"):
    return {
        "message_id": message_id,
        "epoch": 3,
        "step": 1,
        "at": T0,
        "from_state": state,
        "to_state": state,
        "queue": queue,
        "attempt": 0,
        "delivery_count": count,
        "candidate": candidate,
        "batch_limit": limit,
        "next_attempt_at": due,
        "body_version": 1,
        "actor": None,
        "run_id": "7",
        "reason": None,
        "exception_type": None,
    }


def claims(*rows):
    return pa.Table.from_pylist(list(rows), schema=CLAIM_SCHEMA)


def test_a_new_message_is_taken_into_dlng_with_its_first_attempt():
    table = claim_events(claims(claim("m-1", S.TBDL)), epoch=9, at=T0, actor=ACTOR, run_id="7")

    assert table.schema == EVENT_SCHEMA
    (event,) = table.to_pylist()
    assert {k: event[k] for k in ("from_state", "to_state", "attempt", "step", "epoch")} == {
        "from_state": S.TBDL,
        "to_state": S.DLNG,
        "attempt": 1,
        "step": STEP_TAKEN,
        "epoch": 9,
    }
    assert (event["actor"], event["run_id"], event["at"]) == (ACTOR, "7", T0)


def test_a_due_retry_goes_back_to_tbdl_then_into_dlng_with_its_time_cleared():
    due = T0 - timedelta(minutes=5)
    table = claim_events(
        claims(claim("m-2", S.WAIT, count=2, due=due)), epoch=9, at=T0, actor=ACTOR, run_id="7"
    )

    assert [
        (e["from_state"], e["to_state"], e["step"], e["attempt"], e["next_attempt_at"], e["reason"])
        for e in table.to_pylist()
    ] == [
        (S.WAIT, S.TBDL, STEP_DUE, 0, None, S.REASON_DUE),
        (S.TBDL, S.DLNG, STEP_TAKEN, 3, None, None),
    ]


def test_they_are_the_events_rules_start_attempt_writes_one_by_one():
    rows = [
        claim("a", S.TBDL),
        claim("b", S.WAIT, count=4, due=T0 - timedelta(seconds=1), queue="shipping"),
        claim("c", S.TBDL, count=1, candidate=True, limit=8),
    ]
    table = claim_events(claims(*rows), epoch=9, at=T0, actor=ACTOR, run_id="7")

    expected = []
    for row in rows:
        current = dict(row, state=row["to_state"])
        started, _ = rules.start_attempt(current, at=T0, actor=ACTOR, run_id="7")
        for step, ev in zip((STEP_DUE, STEP_TAKEN)[-len(started) :], started, strict=True):
            expected.append({**ev, "epoch": 9, "step": step})
    fields = [f.name for f in EVENT_SCHEMA]
    assert [{k: e[k] for k in fields} for e in table.to_pylist()] == [
        {k: e.get(k) for k in fields} for e in expected
    ]


def test_no_claims_no_events():
    assert claim_events(claims(), epoch=9, at=T0, actor=ACTOR, run_id="7").num_rows == 0
