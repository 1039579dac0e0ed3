"""R7 with real processes: a Celery spark worker is SIGKILLed in the middle of a delivery run (which
the messages' ingest started, with no beat); the sweeper applies R7 to what it held; another worker
delivers everything. Nothing is lost.

And what the console says of it (the one kill of a spark worker, for both): the worker beats from
the moment it is ready, and the Processes page lists it alive. Killed, it cannot say it stopped:
its heartbeat ages, and within two heartbeats the page says it is stale, /metrics gives its
heartbeat an age past the stale one, and the dashboard says no spark worker runs."""

import re
import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from console.browse.selectors import message_detail
from console.delivery.execution import leases_sweep
from console.delivery.models import DeliveryRun
from console.delivery.tasks import delivery_run_task
from console.ingest.services import messages_ingest
from console.processes.models import ProcessBeat
from console.queues.models import Queue
from tests.browse.conftest import login
from tests.metrics.conftest import scrape
from tests.processes.conftest import celery_worker, wait_for
from workers.celery import app
from workers.engine import states as S

# On the embedded database: on PostgreSQL the short soak (test_soak_short) kills the same worker
# twice under load and checks that nothing is lost and every count agrees (CI's two runs split
# the two).
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.one_database("sqlite")]

WORKER = celery_worker("spark", "-P", "solo", "-c", "1", "-l", "INFO")
# Its heartbeat every second (the processes fixture's HEARTBEAT_SECONDS=1).
BEAT_SECONDS = 1


def _ingest(ids, flag):
    result = messages_ingest(
        records=[
            {"id": m, "queue": "orders", "body": "{}", "headers": {"hold-while": str(flag)}}
            for m in ids
        ],
        source="test",
    )
    assert result.accepted == len(ids)


def _state(client, pid):
    page = client.get(reverse("process-list")).content.decode()
    found = re.search(
        rf'<tr class="process-row kind-spark state-(\w+)"[^>]* data-pid="{pid}">', page
    )
    return found[1] if found else None


def _age(process):
    """The spark worker's heartbeat age as /metrics says it; None when it says nothing of it."""
    labels = frozenset({"kind": "spark", "process": process}.items())
    return scrape().get(("antidote_process_heartbeat_age_seconds", labels))


def _shown_alive(admin, worker, log, settings):
    """The worker beats from the moment it is ready, and keeps beating past the stale age.
    Returns its name on /metrics."""
    wait_for(
        lambda: _state(admin, worker.pid) == "alive",
        timeout=120,
        what=f"the spark worker to beat (its log: {log})",
    )
    time.sleep(3 * BEAT_SECONDS)
    assert _state(admin, worker.pid) == "alive"
    row = ProcessBeat.objects.get(pid=worker.pid)
    assert row.stopped_at is None
    process = f"{row.host}:{row.pid}"
    assert 0 <= _age(process) < settings.HEARTBEAT_STALE_SECONDS
    return process


def _shown_stale(admin, worker, process, settings, killed):
    """Stale on the page and on /metrics, and the dashboard says no spark worker runs, as soon as
    the killed worker's last beat is older than the stale age: within two heartbeats of the kill,
    as it beat until then. Read once at that moment, however long a busy machine takes to answer,
    rather than polled against a deadline."""
    last = ProcessBeat.objects.get(pid=worker.pid).beat_at
    assert last <= killed
    stale_at = last + timedelta(seconds=settings.HEARTBEAT_STALE_SECONDS, milliseconds=100)
    assert stale_at - killed <= timedelta(seconds=2 * BEAT_SECONDS + 1)
    time.sleep(max(0, (stale_at - timezone.now()).total_seconds()))
    assert ProcessBeat.objects.get(pid=worker.pid).beat_at == last  # a dead worker beats no more
    assert _state(admin, worker.pid) == "stale"
    assert _age(process) > settings.HEARTBEAT_STALE_SECONDS
    dashboard = admin.get(reverse("dashboard")).content.decode()
    assert 'id="missing-spark"' in dashboard
    assert "No spark worker has reported for" in dashboard


def test_the_sweeper_recovers_what_a_killed_spark_worker_held_none_is_lost_and_it_is_shown_stale(
    processes, personas, tmp_path, settings
):
    settings.HEARTBEAT_SECONDS = BEAT_SECONDS
    settings.HEARTBEAT_STALE_SECONDS = 2 * BEAT_SECONDS
    admin = login(personas["admin"])
    Queue.objects.create(name="orders", handler="tests.handlers_for_tests.held")
    flag = tmp_path / "hold"
    flag.touch()
    held = [f"held-{i:02d}" for i in range(20)]
    app.control.purge()
    first = processes.start(*WORKER, "-n", "spark-first@%h", log=tmp_path / "first.log")
    process = _shown_alive(admin, first, tmp_path / "first.log", settings)
    # No beat here: the ingest itself hands the queue to a run (the wake on ingest).
    _ingest(held, flag)
    run = wait_for(
        lambda: DeliveryRun.objects.filter(status="running").exclude(claims_path="").first(),
        timeout=180,
        what="the run to claim its messages",
    )
    assert run.claimed == 20
    # Merely queued while the run is in flight (its queue is held: no second run): R7 must
    # not touch it.
    _ingest(["late"], flag)
    processes.kill(first)
    _shown_stale(admin, first, process, settings, killed=timezone.now())

    run.refresh_from_db()
    assert run.status == DeliveryRun.RUNNING  # nobody knows yet; its heartbeat just stops
    later = timezone.now() + timedelta(seconds=settings.LEASE_SECONDS + 1)
    assert leases_sweep(now=later) == 20
    run.refresh_from_db()
    assert (run.status, run.recovered) == (DeliveryRun.CRASHED, True)
    assert leases_sweep(now=later) == 0  # sweeping again recovers nothing twice

    for mid in held:
        state = message_detail(message_id=mid)
        assert (state["state"], state["blacklist_candidate"]) == (S.TBDL, True)
        assert state["history"][-2]["to_state"] == S.DLNG
        assert state["history"][-1]["reason"].startswith(S.REASON_CRASH)
    late = message_detail(message_id="late")
    assert (late["state"], late["blacklist_candidate"], len(late["history"])) == (S.TBDL, False, 1)

    flag.unlink()
    processes.start(*WORKER, "-n", "spark-second@%h", log=tmp_path / "second.log")
    delivery_run_task.delay()

    def all_delivered():
        return all(message_detail(message_id=m)["state"] == S.DLVD for m in [*held, "late"])

    wait_for(all_delivered, timeout=180, what="the second worker to deliver everything")
