"""Executing approved requests (R13): real quarantined messages, the plan on the real Spark
session, chunks committed to the lake, the read models kept in step."""

from collections import Counter
from datetime import timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.utils import timezone

from console.audit.models import AuditEntry
from console.audit.selectors import audit_verify
from console.decisions.models import ActionChunk, ActionRequest
from console.decisions.services import action_request_cancel
from console.decisions.tasks import decisions_sweep_task
from console.delivery.models import PoisonEntry
from console.lake.models import LakeCommit
from console.lake.services import lake
from console.queues.models import Queue
from console.readmodels.models import FailureGroup, MessageIndex, QueueStat
from tests.decisions.desk import make_desk

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


def quarantined(desk, n=6, *, queue="orders", body="permanent", **fields):
    """n messages of `queue` in NDLV (a permanent failure quarantines at once), indexed."""
    if not desk.queue_exists(queue):
        desk.queue(queue)
    return desk.quarantine(queue, [body] * n, **fields)


def group_of(message_id):
    return {"kind": "group", "group": MessageIndex.objects.get(message_id=message_id).group_id}


def test_a_reprocess_puts_every_message_back_in_its_queue_reset_and_off_the_poison_list(desk):
    ids = quarantined(desk)
    assert PoisonEntry.objects.filter(message_id__in=ids).count() == 6
    request = desk.execute(desk.request(group_of(ids[0])))

    assert request.status == "done"
    assert (request.done, request.skipped, request.failed) == (6, 0, 0)
    assert request.progress == 100
    for message_id in ids:
        state = desk.state(message_id)
        assert (state["state"], state["delivery_count"], state["blacklist_candidate"]) == (
            "TBDL",
            0,
            False,
        )
        assert desk.index_state(message_id) == "TBDL"
    assert not PoisonEntry.objects.filter(message_id__in=ids).exists()
    events = desk.decision_events(request.id)
    assert Counter(e["message_id"] for e in events) == Counter(ids)
    event = events[0]
    assert (event["from_state"], event["to_state"], event["actor"]) == ("NDLV", "TBDL", "operator")
    assert event["reason"] == (
        f"reprocessed (request {request.id}, approved by approver): the handler is fixed"
    )


def test_the_views_after_a_decision_are_what_a_full_refresh_makes_of_the_lake(desk):
    ids = quarantined(desk, 4)
    quarantined(desk, 3, queue="invoices")
    desk.execute(desk.request({"kind": "selection", "ids": ids[:3]}))
    desk.execute(desk.request({"kind": "message", "id": ids[3]}, kind="fail"))

    kept = {
        "index": {r["message_id"]: r for r in MessageIndex.objects.values()},
        "groups": {g["fingerprint"]: g["states"] for g in FailureGroup.objects.values()},
        "queues": {q.queue: q.counts for q in QueueStat.objects.all()},
    }
    desk.refresh(full=True)
    folded = {
        "index": {r["message_id"]: r for r in MessageIndex.objects.values()},
        "groups": {g["fingerprint"]: g["states"] for g in FailureGroup.objects.values()},
        "queues": {q.queue: q.counts for q in QueueStat.objects.all()},
    }
    assert kept == folded
    assert folded["queues"]["orders"] == {"TBDL": 3, "FAIL": 1}


def test_a_decision_commit_needs_no_refresh_and_a_later_refresh_leaves_the_rows_as_they_are(
    desk,
):
    ids = quarantined(desk, 3)
    desk.execute(desk.request({"kind": "selection", "ids": ids}))
    # Nothing to fold (the decisions brought the views up to date): the refresh takes their
    # commits in only to count their flows out of quarantine, once.
    run = desk.refresh()
    assert run.changed == 0
    assert {desk.index_state(i) for i in ids} == {"TBDL"}
    assert desk.refresh() is None


def test_a_message_that_changed_since_the_request_is_skipped_and_reported(desk):
    ids = quarantined(desk, 4)
    first = desk.request({"kind": "selection", "ids": ids[:3]}, kind="fail")
    second = desk.request({"kind": "selection", "ids": ids[1:]})
    first, second = desk.execute(first), desk.execute(second)

    assert (first.done, first.skipped) == (3, 0)
    assert (second.done, second.skipped, second.status) == (1, 2, "done")
    events = desk.decision_events()
    # Each message decided once, by the request that got to it first.
    assert Counter(e["message_id"] for e in events) == Counter(ids)
    assert [desk.state(i)["state"] for i in ids] == ["FAIL", "FAIL", "FAIL", "TBDL"]
    finished = AuditEntry.objects.get(action="execution.finished", target_id=str(second.id))
    assert finished.details["skipped"] == 2


def _commit_unfolded(message_id, *, to_state, queue="orders"):
    """An events commit moving `message_id` from NDLV to `to_state`, as a writer that leaves the
    read models to the refresh would make it: the index does not know of it until a refresh."""
    from django.db import transaction

    from console.lake.services import epoch_allocate, lake_commit_record
    from workers.lake.schema import EVENT_SCHEMA

    row = {
        "message_id": message_id,
        "epoch": epoch_allocate(purpose="test"),
        "step": 0,
        "at": timezone.now(),
        "from_state": "NDLV",
        "to_state": to_state,
        "queue": queue,
        "attempt": 0,
        "delivery_count": 1,
        "candidate": False,
        "batch_limit": 0,
        "body_version": 1,
        "actor": "someone else",
        "reason": "decided elsewhere",
    }
    store = lake()
    path = store.write_arrow(
        pa.Table.from_pylist([row], schema=EVENT_SCHEMA), store.new_dir("events", "test-unfolded")
    )
    with transaction.atomic():
        lake_commit_record(dataset="events", path=path, row_count=1, idempotency_key=path)


def test_a_reprocess_is_planned_from_the_index_and_a_fail_from_the_lake(desk):
    ids = quarantined(desk, 4)
    reprocess = desk.execute(desk.request({"kind": "selection", "ids": ids[:2]}))
    fail = desk.execute(desk.request({"kind": "selection", "ids": ids[2:]}, kind="fail"))

    assert (reprocess.done, fail.done) == (2, 2)
    assert (reprocess.plan_from_index, fail.plan_from_index) == (True, False)
    plans = {
        e.target_id: e.details["plan"]
        for e in AuditEntry.objects.filter(action="execution.started")
    }
    assert plans == {str(reprocess.id): "index", str(fail.id): "pyarrow"}
    # No fold of the lake was written for the reprocess; the fail has its plan's members.
    assert not (lake().root / reprocess.plan_path / "members").exists()
    assert (lake().root / fail.plan_path / "members").exists()


def test_a_reprocess_planned_from_the_index_applies_the_events_it_has_not_folded_yet(desk):
    ids = quarantined(desk, 3)
    request = desk.request({"kind": "selection", "ids": ids})
    _commit_unfolded(ids[0], to_state="FAIL")
    assert desk.index_state(ids[0]) == "NDLV"  # not refreshed yet

    request = desk.execute(request)

    assert (request.done, request.skipped, request.failed) == (2, 1, 0)
    assert [desk.state(i)["state"] for i in ids] == ["FAIL", "TBDL", "TBDL"]
    assert Counter(e["message_id"] for e in desk.decision_events(request.id)) == Counter(ids[1:])


def test_a_frozen_message_the_index_no_longer_holds_is_planned_from_the_ledger(desk):
    ids = quarantined(desk, 3)
    request = desk.request({"kind": "selection", "ids": ids})
    # As if the index had dropped it (a message that leaves the index after it was frozen):
    # the ledger still knows its state, and the request decides it from there.
    MessageIndex.objects.filter(message_id=ids[0]).delete()

    request = desk.execute(request)

    assert (request.done, request.skipped, request.failed) == (3, 0, 0)
    assert [desk.state(i)["state"] for i in ids] == ["TBDL", "TBDL", "TBDL"]


def test_reprocess_to_another_queue_moves_the_messages_there(desk):
    ids = quarantined(desk, 2)
    desk.queue("orders-retry", handler="tests.handlers_for_tests.always_ok")
    request = desk.execute(
        desk.request({"kind": "selection", "ids": ids}, target_queue="orders-retry")
    )

    assert request.status == "done"
    assert {desk.state(i)["queue"] for i in ids} == {"orders-retry"}
    desk.deliver()
    assert {desk.state(i)["state"] for i in ids} == {"DLVD"}


def _lake_rows(dataset):
    """Every row of the lake's commits of `dataset`."""
    paths = LakeCommit.objects.filter(dataset=dataset).values_list("path", flat=True)
    return lake().read_arrow(dataset, list(paths)).to_pylist()


def test_an_edited_body_is_a_new_version_and_the_original_is_kept(desk):
    (message_id,) = quarantined(desk, 1)
    request = desk.execute(desk.request({"kind": "message", "id": message_id}, edited_body=b"ok"))

    assert request.status == "done"
    detail = desk.state(message_id)
    assert detail["state"] == "TBDL"
    from console.browse.selectors import message_body

    assert message_body(message_id=message_id) == (b"ok", detail["content_type"] or "")
    versions = _lake_rows("messages")
    assert sorted((v["version"], v["body"]) for v in versions if v["message_id"] == message_id) == [
        (1, b"permanent"),
        (2, b"ok"),
    ]
    desk.deliver()
    assert desk.state(message_id)["state"] == "DLVD"


def test_fail_is_final(desk):
    ids = quarantined(desk, 2)
    request = desk.execute(desk.request({"kind": "selection", "ids": ids}, kind="fail"))
    assert request.done == 2
    assert {desk.state(i)["state"] for i in ids} == {"FAIL"}
    desk.deliver()
    assert {desk.state(i)["state"] for i in ids} == {"FAIL"}


def test_end_with_error_notifies_the_sender_and_ends_the_conversations_other_messages(desk):
    desk.queue("orders")
    desk.queue(
        "shipping", handler="tests.handlers_for_tests.always_transient", max_failed_deliveries=0
    )
    desk.ingest("orders", {"o-1": "permanent"}, conversation_id="c-1", sender="shop-7")
    desk.ingest("shipping", {"s-1": "x"}, conversation_id="c-1", sender="shop-7")
    desk.ingest("shipping", {"s-2": "x"}, conversation_id="c-2", sender="shop-8")
    desk.deliver()
    desk.refresh()
    assert desk.state("o-1")["state"] == "NDLV"
    assert desk.state("s-1")["state"] == "WAIT"

    request = desk.execute(
        desk.request(
            {"kind": "message", "id": "o-1"},
            kind="end_with_error",
            error_code="E42",
            error_description="customer unknown",
        )
    )
    assert (request.status, request.done, request.siblings_ended, request.notifications) == (
        "done",
        1,
        1,
        1,
    )
    assert desk.state("o-1")["state"] == "ENDED"
    assert desk.state("s-1")["state"] == "ENDED"
    assert desk.state("s-1")["reason"] == "conversation ended with an error (message o-1)"
    assert desk.state("s-2")["state"] == "WAIT"  # another conversation
    notes = _lake_rows("notifications")
    assert [
        (n["message_id"], n["conversation_id"], n["sender"], n["code"], n["description"])
        for n in notes
    ] == [("o-1", "c-1", "shop-7", "E42", "customer unknown")]
    assert desk.index_state("s-1") == "ENDED"


def test_a_cancel_stops_the_execution_before_its_next_chunk(desk):
    ids = quarantined(desk, 6)
    request = desk.request({"kind": "selection", "ids": ids}, rate_limit=2)

    def sleep(seconds):
        action_request_cancel(actor=desk.personas["approver"], request=request)

    # A clock that stands still: the second chunk always has to wait for its share of time,
    # however long the first one took to commit.
    request = desk.execute(request, sleep=sleep, clock=lambda: 0.0)
    assert request.status == "cancelled"
    assert (request.done, request.chunks_done, request.chunks_total) == (2, 1, 3)
    assert sorted(desk.state(i)["state"] for i in ids) == ["NDLV"] * 4 + ["TBDL"] * 2
    assert AuditEntry.objects.filter(
        action="execution.cancelled", target_id=str(request.id)
    ).exists()


def test_the_rate_limit_spaces_the_chunks(desk):
    ids = quarantined(desk, 6)
    request = desk.request({"kind": "selection", "ids": ids}, rate_limit=2)
    clock = {"now": 0.0}
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        clock["now"] += seconds

    request = desk.execute(request, sleep=sleep, clock=lambda: clock["now"])
    assert request.status == "done"
    # Three chunks of two at two a second: the second and third wait a second each.
    assert sum(slept) == pytest.approx(2.0)


def test_a_canary_that_is_delivered_lets_the_rest_go(desk):
    ids = quarantined(desk, 5)
    Queue.objects.filter(name="orders").update(handler="tests.handlers_for_tests.always_ok")
    request = desk.execute(desk.request({"kind": "selection", "ids": ids}, canary=2))

    assert (request.status, request.done) == ("canary", 2)
    assert sorted(desk.state(i)["state"] for i in ids) == ["NDLV"] * 3 + ["TBDL"] * 2
    assert decisions_sweep_task()["canaries"] == {request.id: "pending"}
    desk.deliver()
    assert decisions_sweep_task()["canaries"] == {request.id: "passed"}
    request = desk.execute(request)
    assert (request.status, request.done) == ("done", 5)
    assert "2 canary message(s) delivered" in request.canary_result


def test_a_canary_that_fails_again_stops_the_request_and_leaves_the_rest(desk):
    ids = quarantined(desk, 5)
    request = desk.execute(desk.request({"kind": "selection", "ids": ids}, canary=1))
    desk.deliver()
    assert decisions_sweep_task()["canaries"] == {request.id: "failed"}
    request.refresh_from_db()
    assert request.status == "failed"
    assert "failed again: permanent failure" in request.canary_result
    assert sorted(desk.state(i)["state"] for i in ids) == ["NDLV"] * 5
    assert desk.execute(request) is None


def test_a_worker_that_died_mid_request_is_taken_over_and_no_chunk_is_decided_twice(desk):
    ids = quarantined(desk, 6)
    request = desk.request({"kind": "selection", "ids": ids}, rate_limit=2)

    class Died(BaseException):
        pass

    def die(seconds):
        raise Died

    with pytest.raises(Died):
        desk.execute(request, sleep=die)
    request.refresh_from_db()
    assert (request.status, request.chunks_done) == ("running", 1)
    assert desk.execute(request) is None  # its heartbeat is fresh: it may still be alive
    ActionRequest.objects.filter(id=request.id).update(
        heartbeat_at=timezone.now() - timedelta(minutes=5)
    )
    assert decisions_sweep_task()["enqueued"] == 1
    request = desk.execute(request, sleep=lambda s: None)
    assert (request.status, request.done, request.chunks_done) == ("done", 6, 3)
    assert Counter(e["message_id"] for e in desk.decision_events(request.id)) == Counter(ids)
    assert ActionChunk.objects.filter(request=request).count() == 3
    assert audit_verify().ok


def test_an_expired_approval_does_not_run(desk):
    ids = quarantined(desk, 2)
    request = desk.request({"kind": "selection", "ids": ids})
    ActionRequest.objects.filter(id=request.id).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert desk.execute(request) is None
    request.refresh_from_db()
    assert request.status == "expired"
    assert {desk.state(i)["state"] for i in ids} == {"NDLV"}


def test_a_frozen_set_changed_after_approval_is_refused_and_nothing_is_decided(desk):
    ids = quarantined(desk, 3)
    request = desk.request({"kind": "selection", "ids": ids})
    path = lake().path(request.ids_path)
    table = pq.read_table(path)
    pq.write_table(table.slice(0, 2), path)  # someone with access to the lake drops an id
    request = desk.execute(request)

    assert request.status == "failed"
    assert "no longer matches the set that was approved" in request.error
    assert {desk.state(i)["state"] for i in ids} == {"NDLV"}
    assert not desk.decision_events()
