"""systemd's stop, or honcho's SIGTERM at `make run`'s Ctrl-C, to a spark worker that has run Spark
jobs: it stops its session and its JVM itself (the JVM ignores the group's SIGTERM), and prints no
traceback (the driver's accumulator thread once printed an EOFError as the JVM went first)."""

import os
import signal

import psutil
import pytest

from console.delivery.models import DeliveryRun
from console.ingest.services import messages_ingest
from console.queues.models import Queue
from tests.processes.conftest import wait_for
from workers.celery import app

# Signals, process groups and tracebacks: the same whatever the database.
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.database_blind]

# As the Procfile starts it.
WORKER = ["-m", "celery", "-A", "workers", "worker", "-Q", "spark", "-P", "threads", "-c", "4"]
# Bounds on waits, against a hang; not measures of speed.
PATIENCE = 300


def _jvm(proc):
    for child in psutil.Process(proc.pid).children(recursive=True):
        if child.name() == "java":
            return child
    return None


# SIGTERM: what systemd's stop and honcho (at `make run`'s Ctrl-C) send. A Ctrl-C straight to a
# worker (SIGINT) takes the same warm shutdown and the same session stop; one signal is tested,
# as one kill is per process kind (a second case cost a minute of CI for the same path).
def test_a_sigterm_to_the_spark_workers_group_stops_it_without_a_traceback(processes, tmp_path):
    Queue.objects.create(name="orders", handler="workers.demo.handlers.orders")
    app.control.purge()
    log = tmp_path / "spark.log"
    # Every delivery run a Spark job, with Python workers: the driver's accumulator server has
    # a connection from the JVM, as after any delivery in the product.
    worker = processes.start(
        *WORKER, "-n", "spark-stops@%h", log=log, env={"DELIVERY_LOCAL_MAX": "0"}
    )
    result = messages_ingest(
        records=[
            {"id": f"o-{i}", "queue": "orders", "body": '{"order_id": "A", "items": []}'}
            for i in range(5)
        ],
        source="test",
    )
    assert result.accepted == 5
    wait_for(
        lambda: DeliveryRun.objects.filter(status="committed", claimed=5).exists(),
        timeout=PATIENCE,
        what="a delivery run on Spark",
    )
    jvm = _jvm(worker)
    assert jvm is not None

    os.killpg(worker.pid, signal.SIGTERM)

    code = worker.wait(timeout=PATIENCE)
    output = log.read_text(errors="replace")
    # Celery's warm shutdown ends with 0 after a SIGTERM.
    assert code == 0, output[-3000:]
    assert "Traceback" not in output and "EOFError" not in output, output[-3000:]
    assert not jvm.is_running() or jvm.status() == psutil.STATUS_ZOMBIE, "the JVM outlived it"
