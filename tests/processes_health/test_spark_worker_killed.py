"""A real spark worker (Celery, as the Procfile starts it) beats from the moment it is ready; the
Processes page lists it alive. SIGKILLed, it cannot say it stopped: its heartbeat ages, and
within two heartbeats the page says it is stale, /metrics gives its heartbeat an age past the stale
one, and the dashboard says no spark worker runs."""

import re
import time

import pytest
from django.urls import reverse

from console.processes.models import ProcessBeat
from tests.browse.conftest import login
from tests.metrics.conftest import scrape
from tests.processes.conftest import wait_for
from tests.processes.test_spark_worker_killed import WORKER

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# The spark worker as tests/processes start it; its heartbeat every second (the processes
# fixture's HEARTBEAT_SECONDS=1).
BEAT_SECONDS = 1


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


def test_a_killed_spark_worker_is_shown_stale_within_two_heartbeats(
    processes, personas, settings, tmp_path
):
    settings.HEARTBEAT_SECONDS = BEAT_SECONDS
    settings.HEARTBEAT_STALE_SECONDS = 2 * BEAT_SECONDS
    admin = login(personas["admin"])
    worker = processes.start(*WORKER, "-n", "spark-health@%h", log=tmp_path / "spark.log")

    wait_for(
        lambda: _state(admin, worker.pid) == "alive",
        timeout=120,
        what=f"the spark worker to beat (its log: {tmp_path / 'spark.log'})",
    )
    # It keeps beating: still alive past the stale age.
    time.sleep(3 * BEAT_SECONDS)
    assert _state(admin, worker.pid) == "alive"
    row = ProcessBeat.objects.get(pid=worker.pid)
    assert row.stopped_at is None
    process = f"{row.host}:{row.pid}"
    assert 0 <= _age(process) < settings.HEARTBEAT_STALE_SECONDS

    processes.kill(worker)
    killed = time.monotonic()
    wait_for(
        lambda: (
            _state(admin, worker.pid) == "stale"
            and (_age(process) or 0) > settings.HEARTBEAT_STALE_SECONDS
        ),
        timeout=2 * BEAT_SECONDS + 1,
        what="the page and /metrics to show the killed spark worker stale",
    )

    assert time.monotonic() - killed <= 2 * BEAT_SECONDS + 1
    dashboard = admin.get(reverse("dashboard")).content.decode()
    assert 'id="missing-spark"' in dashboard
    assert "No spark worker has reported for" in dashboard
