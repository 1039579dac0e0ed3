"""A running row's heartbeat keeps its lease alive while the work runs, and only while running."""

import time
from datetime import timedelta

from django.utils import timezone

from console.delivery.models import DeliveryRun
from console.leases import Heartbeat


def test_the_heartbeat_renews_a_running_row_until_stopped(transactional_db):
    old = timezone.now() - timedelta(hours=1)
    run = DeliveryRun.objects.create(epoch=1, started_at=old, heartbeat_at=old)
    beat = Heartbeat(DeliveryRun, run.id, 0.1)
    beat.start()
    time.sleep(0.5)
    beat.stop()
    run.refresh_from_db()
    assert run.heartbeat_at > old + timedelta(minutes=59)
    renewed = run.heartbeat_at
    time.sleep(0.3)
    run.refresh_from_db()
    assert run.heartbeat_at == renewed  # stopped means stopped


def test_the_heartbeat_leaves_a_row_that_is_no_longer_running_alone(transactional_db):
    old = timezone.now() - timedelta(hours=1)
    run = DeliveryRun.objects.create(
        epoch=1, started_at=old, heartbeat_at=old, status=DeliveryRun.CRASHED
    )
    beat = Heartbeat(DeliveryRun, run.id, 0.1)
    beat.start()
    time.sleep(0.4)
    beat.stop()
    run.refresh_from_db()
    assert run.heartbeat_at == old
