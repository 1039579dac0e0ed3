"""R7 with real processes: a Celery spark worker is SIGKILLed in the middle of a delivery run (which
the messages' ingest started, with no beat); the sweeper applies R7 to what it held; another worker
delivers everything. Nothing is lost."""

from datetime import timedelta

import pytest
from django.utils import timezone

from console.browse.selectors import message_detail
from console.delivery.models import DeliveryRun
from console.delivery.services import leases_sweep
from console.delivery.tasks import delivery_run_task
from console.ingest.services import messages_ingest
from console.queues.models import Queue
from tests.processes.conftest import wait_for
from workers.celery import app
from workers.engine import states as S

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WORKER = [
    "-m",
    "celery",
    "-A",
    "workers",
    "worker",
    "-Q",
    "spark",
    "-P",
    "solo",
    "-c",
    "1",
    "--without-heartbeat",
    "--without-mingle",
    "--without-gossip",
    "-l",
    "INFO",
]


def _ingest(ids, flag):
    result = messages_ingest(
        records=[
            {"id": m, "queue": "orders", "body": "{}", "headers": {"hold-while": str(flag)}}
            for m in ids
        ],
        source="test",
    )
    assert result.accepted == len(ids)


def test_the_sweeper_recovers_what_a_killed_spark_worker_held_and_none_is_lost(
    processes, tmp_path, settings
):
    Queue.objects.create(name="orders", handler="tests.handlers_for_tests.held")
    flag = tmp_path / "hold"
    flag.touch()
    held = [f"held-{i:02d}" for i in range(20)]
    app.control.purge()
    first = processes.start(*WORKER, "-n", "spark-first@%h", log=tmp_path / "first.log")
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
