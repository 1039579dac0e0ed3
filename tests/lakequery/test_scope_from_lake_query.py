"""A lake query's result as the scope of an action request: frozen into the ids of its messages
that are quarantined now (NDLV in the message index), in order, with the same hash, count,
breakdown and sample as every other scope."""

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from console.decisions import scope as scope_module
from console.decisions.scope import ScopeError, frozen_ids, ids_digest, scope_freeze
from console.decisions.services import Action, action_request_create
from console.lakequery.models import LakeQuery
from console.readmodels.models import MessageIndex
from tests.lakequery.conftest import done_query, result_row

T0 = timezone.now().replace(microsecond=0)


@pytest.fixture
def index(db, lake_root):
    """m-1, m-3, m-5 quarantined now; m-2 waits for a retry; m-4 was delivered (and never
    failed, so the index does not hold it); m-6 is quarantined but not in the query's result."""
    for message_id, state, queue in [
        ("m-1", "NDLV", "orders"),
        ("m-2", "WAIT", "orders"),
        ("m-3", "NDLV", "payments"),
        ("m-5", "NDLV", "orders"),
        ("m-6", "NDLV", "orders"),
    ]:
        MessageIndex.objects.create(
            message_id=message_id,
            queue=queue,
            original_queue=queue,
            state=state,
            delivery_count=5,
            reason=f"{message_id} not found",
            group_id=f"g-{queue}",
            body_path="messages/x",
            enqueued_at=T0,
            updated_at=T0,
            last_failure_at=T0 - timedelta(minutes=1),
        )


@pytest.fixture
def query(index, personas):
    rows = [result_row(f"m-{i}", state="NDLV") for i in (1, 2, 3, 4, 5)]
    return done_query(personas["operator"], rows, files=2)


def ids_of(path):
    return [i for batch in frozen_ids(path) for i in batch]


def test_a_lake_query_scope_freezes_its_results_that_are_quarantined_now(query, personas):
    frozen = scope_freeze({"kind": "lake_query", "query": query.id}, actor=personas["operator"])

    assert ids_of(frozen.ids_path) == ["m-1", "m-3", "m-5"]
    assert (frozen.count, frozen.ids_sha256) == (3, ids_digest(["m-1", "m-3", "m-5"]))
    assert frozen.breakdown == {
        "queues": {"orders": 2, "payments": 1},
        "groups": {"g-orders": 2, "g-payments": 1},
    }
    assert [(s["message_id"], s["reason"]) for s in frozen.sample] == [
        ("m-1", "m-1 not found"),
        ("m-3", "m-3 not found"),
        ("m-5", "m-5 not found"),
    ]


def test_the_result_is_checked_a_batch_at_a_time_and_keeps_its_order(query, personas, monkeypatch):
    monkeypatch.setattr(scope_module, "LAKE_QUERY_BATCH", 2)

    frozen = scope_freeze({"kind": "lake_query", "query": str(query.id)})

    assert ids_of(frozen.ids_path) == ["m-1", "m-3", "m-5"]


def test_an_action_request_on_a_lake_query_acts_on_the_frozen_set(query, personas):
    request = action_request_create(
        actor=personas["operator"],
        scope={"kind": "lake_query", "query": query.id},
        action=Action(kind="fail"),
        comment="these were found in the lake",
    )

    assert request.count == 3
    assert ids_of(request.ids_path) == ["m-1", "m-3", "m-5"]
    assert request.scope == {"kind": "lake_query", "query": query.id}


@pytest.mark.parametrize(
    ("scope", "message"),
    [
        ({"kind": "lake_query"}, "a lake query scope names the query"),
        ({"kind": "lake_query", "query": True}, "a lake query scope names the query"),
        ({"kind": "lake_query", "query": 999_999}, "there is no lake query 999999"),
    ],
)
def test_a_bad_lake_query_scope_is_refused_clearly(query, scope, message):
    with pytest.raises(ScopeError, match=message):
        scope_freeze(scope)


@pytest.mark.parametrize("status", [LakeQuery.QUEUED, LakeQuery.RUNNING, LakeQuery.FAILED])
def test_only_a_finished_querys_result_is_a_scope(query, status):
    LakeQuery.objects.filter(id=query.id).update(status=status)

    with pytest.raises(ScopeError, match=f"is {status}: only a finished query's result"):
        scope_freeze({"kind": "lake_query", "query": query.id})


def test_a_query_none_of_whose_results_is_quarantined_freezes_nothing(index, personas):
    query = done_query(personas["operator"], [result_row("m-2"), result_row("m-4")])

    with pytest.raises(ScopeError, match="no quarantined message matches"):
        scope_freeze({"kind": "lake_query", "query": query.id})


def test_a_query_that_searched_bodies_is_a_scope_only_for_who_may_read_bodies(index, personas):
    query = done_query(
        personas["operator"],
        [result_row("m-1")],
        criteria={"body_contains": "secret"},
    )

    with pytest.raises(PermissionDenied):
        scope_freeze({"kind": "lake_query", "query": query.id}, actor=personas["admin"])
    frozen = scope_freeze({"kind": "lake_query", "query": query.id}, actor=personas["approver"])
    assert frozen.count == 1


def test_the_index_query_of_a_lake_query_scope_is_refused(query):
    from console.decisions.scope import scope_queryset

    with pytest.raises(ScopeError, match="its result file"):
        scope_queryset({"kind": "lake_query", "query": query.id})
