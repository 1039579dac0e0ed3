"""R16 with real processes (a Celery spark worker, a default worker and beat): a queue whose
handler hangs never holds back delivery on another queue. Beat's tick hands every queue whose
previous run has finished to a run of its own."""

import pytest

from console.browse.selectors import message_detail
from console.delivery.models import DeliveryLock, DeliveryRun
from console.ingest.services import messages_ingest
from console.queues.models import Queue
from tests.processes.conftest import wait_for
from workers.celery import app
from workers.engine import states as S

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CELERY = ["-m", "celery", "-A", "workers"]
QUIET = ["--without-heartbeat", "--without-mingle", "--without-gossip", "-l", "INFO"]
SCHEDULE = {
    "DELIVERY_INTERVAL_SECONDS": "2",
    # Only delivery matters here: the other periodic work stays out of the way.
    "REFRESH_ON_COMMIT": "false",
    "REFRESH_INTERVAL_SECONDS": "3600",
    "INBOX_POLL_SECONDS": "3600",
    "SWEEP_INTERVAL_SECONDS": "3600",
}


def _ingest(queue, ids, **fields):
    records = [{"id": m, "queue": queue, "body": "{}", **fields} for m in ids]
    assert messages_ingest(records=records, source="test").accepted == len(ids)


def _state(message_id):
    return message_detail(message_id=message_id)["state"]


def test_a_hanging_handler_on_one_queue_never_holds_a_healthy_queue_back(processes, tmp_path):
    Queue.objects.create(name="slow", handler="tests.handlers_for_tests.held")
    Queue.objects.create(name="healthy", handler="tests.handlers_for_tests.always_ok")
    flag = tmp_path / "hold"
    flag.touch()
    _ingest("slow", ["slow-1"], headers={"hold-while": str(flag)})
    app.control.purge()
    spark_worker = [*CELERY, "worker", "-Q", "spark", "-P", "threads", "-c", "4", *QUIET]
    processes.start(*spark_worker, "-n", "spark@%h", log=tmp_path / "spark.log", env=SCHEDULE)
    default_worker = [*CELERY, "worker", "-Q", "default", "-P", "threads", "-c", "2", *QUIET]
    processes.start(*default_worker, "-n", "default@%h", log=tmp_path / "default.log", env=SCHEDULE)
    beat = [*CELERY, "beat", "-s", str(tmp_path / "beat-schedule"), "-l", "INFO"]
    processes.start(*beat, log=tmp_path / "beat.log", env=SCHEDULE)

    wait_for(lambda: _state("slow-1") == S.DLNG, timeout=240, what="the slow queue's run to claim")
    slow_run = DeliveryLock.objects.get(queue="slow").run

    healthy = [f"healthy-{i}" for i in range(5)]
    _ingest("healthy", healthy)
    wait_for(
        lambda: all(_state(m) == S.DLVD for m in healthy),
        timeout=240,
        what="the healthy queue's messages to be delivered",
    )
    # Delivered by runs of their own while the slow queue's run still holds its message.
    assert _state("slow-1") == S.DLNG
    slow_run.refresh_from_db()
    assert slow_run.status == DeliveryRun.RUNNING and slow_run.queues == ["slow"]
    committed = DeliveryRun.objects.filter(status=DeliveryRun.COMMITTED)
    assert any(run.queues == ["healthy"] for run in committed)

    flag.unlink()
    wait_for(lambda: _state("slow-1") == S.DLVD, timeout=240, what="the slow message to finish")
    wait_for(
        lambda: not DeliveryLock.objects.exists(), timeout=60, what="every queue to be free again"
    )
