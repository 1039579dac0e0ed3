"""R16: beat's tick hands every enabled queue that no running run holds to a delivery run of its
own; a queue is held by one run at a time and set free in the transaction that ends the run."""

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from console.delivery.models import DeliveryLock, DeliveryRun
from console.delivery.services import delivery_dispatch, leases_sweep
from console.queues.models import Queue


@pytest.fixture
def queues(db):
    cache.clear()
    for name in ("orders", "payments", "shipping"):
        Queue.objects.create(name=name, handler="tests.handlers_for_tests.always_ok")
    Queue.objects.filter(name="shipping").update(enabled=False)


def _running(*queues, heartbeat_age=0):
    now = timezone.now()
    run = DeliveryRun.objects.create(
        epoch=DeliveryRun.objects.count() + 1,
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
