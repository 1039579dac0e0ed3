"""R16: beat's tick hands every enabled queue that no running run holds to a delivery run of its
own; a queue is held by one run at a time and set free in the transaction that ends the run."""

import threading
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection, connections, transaction
from django.db.models.signals import post_save
from django.utils import timezone

from console.delivery.execution import _run_leave, _run_start, leases_sweep
from console.delivery.models import DeliveryLock, DeliveryRun
from console.delivery.receivers import delivery_wake
from console.delivery.services import delivery_dispatch, delivery_handovers_take
from console.delivery.signals import queues_wanted
from console.ingest.services import messages_ingest
from console.lake.models import LakeCommit
from console.queues.models import Queue
from console.readmodels.models import MessageIndex, RefreshRun


def _events_commit(**fields):
    """An events commit in the catalog, as a writer leaves it (the files do not matter here)."""
    n = LakeCommit.objects.count()
    return LakeCommit.objects.create(
        dataset="events", path=f"events/test-{n}", row_count=1, idempotency_key=f"k{n}", **fields
    )


def _refreshed():
    """The read models have folded every events commit so far."""
    upto = LakeCommit.objects.order_by("-id").values_list("id", flat=True).first()
    now = timezone.now()
    RefreshRun.objects.create(
        status=RefreshRun.COMMITTED, upto_commit=upto, started_at=now, heartbeat_at=now
    )


def _indexed(message_id, queue, state, next_attempt_at=None):
    now = timezone.now()
    MessageIndex.objects.create(
        message_id=message_id,
        queue=queue,
        original_queue=queue,
        state=state,
        next_attempt_at=next_attempt_at,
        body_path="messages/x",
        enqueued_at=now,
        updated_at=now,
    )


@pytest.fixture
def queues(db):
    cache.clear()
    for name in ("orders", "payments", "shipping"):
        Queue.objects.create(name=name, handler="tests.handlers_for_tests.always_ok")
    Queue.objects.filter(name="shipping").update(enabled=False)
    # Events the read models have not folded yet (an ingest's): any queue may have work.
    _events_commit()


def _running(*queues, heartbeat_age=0, epoch=None):
    now = timezone.now()
    run = DeliveryRun.objects.create(
        epoch=epoch or DeliveryRun.objects.count() + 1,
        queues=list(queues),
        started_at=now,
        heartbeat_at=now - timedelta(seconds=heartbeat_age),
    )
    for queue in queues:
        DeliveryLock.objects.create(queue=queue, run=run, since=now)
    return run


def test_every_enabled_queue_gets_a_run_of_its_own(queues):
    handed = []

    assert delivery_dispatch(enqueue=handed.append) == ["orders", "payments"]
    assert handed == ["orders", "payments"]


def test_a_queue_whose_run_is_still_going_is_not_handed_over_again(queues):
    _running("orders")
    handed = []

    delivery_dispatch(enqueue=handed.append)

    assert handed == ["payments"]


def test_a_queue_is_handed_over_once_per_interval_unless_asked_for_now(queues):
    first, second, now = [], [], []
    delivery_dispatch(enqueue=first.append)
    delivery_dispatch(enqueue=second.append)
    delivery_dispatch(enqueue=now.append, now=True)

    assert (first, second, now) == (["orders", "payments"], [], ["orders", "payments"])


def test_a_dead_runs_queues_are_free_again_once_the_sweeper_declares_it_dead(
    transactional_db, queues, settings
):
    dead = _running("orders", heartbeat_age=settings.LEASE_SECONDS + 1)
    alive = _running("payments")

    leases_sweep()

    dead.refresh_from_db()
    assert dead.status == DeliveryRun.CRASHED
    assert list(DeliveryLock.objects.values_list("queue", "run")) == [("payments", alive.id)]


def test_once_the_read_models_are_current_only_queues_with_a_due_message_get_a_run(queues):
    _refreshed()
    soon = timezone.now() + timedelta(minutes=5)
    _indexed("o-done", "orders", "DLVD")
    _indexed("o-parked", "orders", "NDLV")
    _indexed("o-later", "orders", "WAIT", next_attempt_at=soon)
    _indexed("p-new", "payments", "TBDL")
    _indexed("s-new", "shipping", "TBDL")  # disabled: never handed over
    handed = []

    assert delivery_dispatch(enqueue=handed.append) == ["payments"]


def test_a_retry_that_has_come_due_gets_its_queue_a_run(queues):
    _refreshed()
    _indexed("o-retry", "orders", "WAIT", next_attempt_at=timezone.now() - timedelta(seconds=1))
    handed = []

    delivery_dispatch(enqueue=handed.append)

    assert handed == ["orders"]


def test_with_nothing_due_no_queue_gets_a_run(queues):
    _refreshed()
    _indexed("o-done", "orders", "DLVD")
    handed = []

    assert delivery_dispatch(enqueue=handed.append, now=True) == []
    assert handed == []


def test_events_the_read_models_have_not_folded_make_every_queue_a_candidate(queues):
    _refreshed()
    _indexed("o-done", "orders", "DLVD")
    _events_commit()  # a recovery, say: it may have put anything back in TBDL
    handed = []

    delivery_dispatch(enqueue=handed.append)

    assert handed == ["orders", "payments"]


def test_a_decision_that_updated_the_read_models_itself_is_read_from_them(queues):
    _refreshed()
    _events_commit(views_applied=True)  # a reprocess chunk: its messages are TBDL in the index
    _indexed("p-again", "payments", "TBDL")
    handed = []

    delivery_dispatch(enqueue=handed.append)

    assert handed == ["payments"]


def test_an_empty_lake_starts_no_run(db):
    cache.clear()
    Queue.objects.create(name="orders", handler="tests.handlers_for_tests.always_ok")
    handed = []

    assert delivery_dispatch(enqueue=handed.append) == []


def test_ingest_hands_the_queues_of_its_messages_to_runs_once_it_commits(
    transactional_db, lake_root, settings
):
    cache.clear()
    for name in ("orders", "payments"):
        Queue.objects.create(name=name, handler="tests.handlers_for_tests.always_ok")
    settings.REFRESH_ON_COMMIT = False
    handed = []

    assert messages_ingest(records=[{"id": "o-1", "queue": "orders", "body": "{}"}], source="t")

    # The wake handed "orders" (and only it) to a run as the ingest committed: beat's next tick
    # finds it handed over already and does not send it again meanwhile.
    assert cache.get("delivery:dispatched:orders") == 1
    assert cache.get("delivery:dispatched:payments") is None
    delivery_dispatch(enqueue=handed.append)
    assert handed == ["payments"]


def test_a_wake_hands_over_no_queue_whose_run_has_not_read_the_lake_yet(queues):
    delivery_wake({"orders"})
    cache.delete("delivery:dispatched:orders")

    delivery_wake({"orders"})  # its run task is still waiting for the spark worker

    assert cache.get("delivery:dispatched:orders") is None
    delivery_handovers_take(queues=["orders"])  # the run starts, before it reads the lake
    delivery_wake({"orders"})
    assert cache.get("delivery:dispatched:orders") == 1


def test_a_queue_asked_for_while_its_run_goes_on_gets_its_next_run_as_soon_as_it_ends(
    queues, django_capture_on_commit_callbacks
):
    run = _running("orders")
    handed, wanted = [], []

    def heard(sender, queues, **kwargs):
        wanted.extend(queues)

    queues_wanted.connect(heard)

    # New messages for a held queue: its run read the lake before them, so the queue is
    # marked, not handed over beside the run.
    assert delivery_dispatch(enqueue=handed.append, now=True, queues=["orders"]) == []
    assert DeliveryLock.objects.get(queue="orders").wanted

    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        _run_leave(run, status=DeliveryRun.COMMITTED)

    queues_wanted.disconnect(heard)
    assert wanted == ["orders"]
    # The run's end handed it over at once (not at beat's next tick).
    assert cache.get("delivery:dispatched:orders") == 1
    assert not DeliveryLock.objects.exists()


def test_a_run_nobody_asked_for_meanwhile_ends_without_handing_its_queues_over(
    queues, django_capture_on_commit_callbacks
):
    run = _running("orders", "payments")
    delivery_dispatch(enqueue=[].append, now=True, queues=["payments"])

    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        _run_leave(run, status=DeliveryRun.COMMITTED)

    assert cache.get("delivery:dispatched:orders") is None
    assert cache.get("delivery:dispatched:payments") == 1


def test_a_run_that_finds_its_queue_held_asks_the_holder_for_the_next_run(
    queues, django_capture_on_commit_callbacks
):
    # A wake handed "orders" over while it was free; a run beat had started took it before the
    # wake's run began, having read the lake before the new message.
    holder = _running("orders")

    assert _run_start(["orders"]) is None

    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        _run_leave(holder, status=DeliveryRun.COMMITTED)
    # The holder's end handed the queue over at once (not at beat's next tick).
    assert cache.get("delivery:dispatched:orders") == 1


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="SQLite lets one writer at a time: two runs never both find a queue free",
)
def test_a_run_that_loses_the_race_for_a_queue_still_asks_the_winner_for_the_next_run(
    transactional_db, queues
):
    # Two runs read the holders at the same time and both find "orders" free: the beat's run
    # commits its lock first, having read the lake before the message the wake's run was asked
    # for. The wake's run fails on the lock's unique key, and its wanted mark must not go with
    # its rolled-back transaction.
    winner = []

    def other_run_takes_it(sender, instance, created, **kwargs):
        if winner:
            return
        winner.append(None)

        def take():
            # An epoch of its own: the other run's, not committed yet, is taken.
            winner[0] = _running("orders", epoch=10**6)
            connections.close_all()

        thread = threading.Thread(target=take)
        thread.start()
        thread.join()

    post_save.connect(other_run_takes_it, sender=DeliveryRun, weak=False)
    try:
        assert _run_start(["orders"]) is None
    finally:
        post_save.disconnect(other_run_takes_it, sender=DeliveryRun)

    assert DeliveryLock.objects.get(queue="orders").run_id == winner[0].id
    assert DeliveryLock.objects.get(queue="orders").wanted
