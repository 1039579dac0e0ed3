"""One lease for every kind of run (console.leases): a run is claimed once, renewed and finished
only by the claim that holds it, declared dead once its heartbeat stopped, and every kind is
known to the registry the Runs page reads."""

import os
import socket
from datetime import timedelta

import pytest
from django.apps import apps
from django.utils import timezone

from console import leases
from console.delivery.models import DeliveryRun
from console.lake.models import CompactionRun
from console.queues.models import BrokerSource
from console.readmodels.models import RefreshRun
from console.retention.models import PurgeRun

pytestmark = pytest.mark.django_db


def preview(**fields):
    """A purge preview: queued, unless told otherwise (previews may run beside each other)."""
    return PurgeRun.objects.create(requested_by="alice", dry_run=True, **fields)


def test_a_queued_run_is_claimed_once_with_a_token_of_its_own():
    purge = preview()

    token = leases.claim(PurgeRun, purge.id)

    assert token.startswith(f"{socket.gethostname()}:{os.getpid()}:")
    assert leases.claim(PurgeRun, purge.id) is None
    purge.refresh_from_db()
    assert (purge.status, purge.worker, purge.attempts) == ("running", token, 1)
    assert purge.started_at == purge.heartbeat_at


def test_a_run_whose_heartbeat_stopped_is_claimed_again_until_its_attempts_are_spent(settings):
    settings.HEARTBEAT_SECONDS = 1
    old = timezone.now() - timedelta(minutes=5)
    dead = preview(status="running", worker="gone:1:a", heartbeat_at=old, attempts=1)
    spent = preview(status="running", worker="gone:1:b", heartbeat_at=old, attempts=3)
    alive = preview(status="running", worker="here:1:c", heartbeat_at=timezone.now())

    assert leases.claim(PurgeRun, dead.id) is not None
    assert leases.claim(PurgeRun, spent.id) is None
    assert leases.claim(PurgeRun, alive.id) is None


def test_only_the_holder_renews_and_finishes_its_run():
    purge = preview()
    token = leases.claim(PurgeRun, purge.id)

    assert not leases.heartbeat(PurgeRun, purge.id, worker="someone:else")
    assert leases.held(PurgeRun, purge.id, worker=token)
    assert not leases.finish(PurgeRun, purge.id, worker="someone:else", status=PurgeRun.DONE)
    assert leases.fail(PurgeRun, purge.id, "x" * 6000, worker=token)
    assert not leases.heartbeat(PurgeRun, purge.id, worker=token)  # over: nothing to renew

    purge.refresh_from_db()
    assert (purge.status, len(purge.error)) == ("failed", leases.ERROR_MAX)
    assert purge.finished_at == purge.heartbeat_at
    assert not leases.held(PurgeRun, purge.id)


def test_a_started_run_is_held_by_this_process():
    run = leases.start(DeliveryRun, epoch=1, queues=["orders"])

    assert (run.status, run.worker) == ("running", f"{socket.gethostname()}:{os.getpid()}")
    assert run.started_at == run.heartbeat_at


def test_the_sweep_declares_dead_only_the_runs_whose_lease_ran_out(settings):
    settings.LEASE_SECONDS = 120
    settings.HEARTBEAT_SECONDS = 10
    now = timezone.now()

    dead = CompactionRun.objects.create(
        kind="state", started_at=now, heartbeat_at=now - timedelta(minutes=3)
    )
    live = CompactionRun.objects.create(
        kind="history", started_at=now, heartbeat_at=now - timedelta(minutes=1)
    )
    # A refresh is leased by beats (3 x 10 s), not by LEASE_SECONDS.
    refresh = RefreshRun.objects.create(started_at=now, heartbeat_at=now - timedelta(minutes=1))

    swept = leases.sweep_stale(CompactionRun, now=now) + leases.sweep_stale(RefreshRun, now=now)

    assert sorted((type(r).__name__, r.id) for r in swept) == [
        ("CompactionRun", dead.id),
        ("RefreshRun", refresh.id),
    ]
    dead.refresh_from_db()
    live.refresh_from_db()
    assert (dead.status, live.status) == ("failed", "running")
    assert dead.error == f"lease expired: no heartbeat since {dead.heartbeat_at.isoformat()}"
    assert dead.heartbeat_at == now - timedelta(minutes=3)  # its last sign of life stays


def test_the_registry_lists_the_runs_page_kinds_in_their_order():
    assert [k.name for k in leases.kinds(listed=True)] == [
        "delivery",
        "refresh",
        "compaction",
        "purge",
    ]
    assert leases.kind_of(PurgeRun).title == "purge"


def test_every_model_with_a_heartbeat_takes_it_from_the_one_lease():
    beating = [
        m for m in apps.get_models() if any(f.name == "heartbeat_at" for f in m._meta.fields)
    ]

    assert BrokerSource in beating
    for model in beating:
        assert issubclass(model, leases.Heartbeating), model
    runs = {m for m in beating if issubclass(m, leases.LeasedRun)}
    assert runs == {k.model for k in leases.kinds()}
