"""A delivery run on a real Spark standalone cluster: a master and a worker started from the
pyspark wheel, and `manage.py deliver` in its own process with SPARK_MASTER pointing at them."""

import re
from pathlib import Path

import pyspark
import pytest

from console.browse.selectors import message_detail
from console.ingest.services import messages_ingest
from console.queues.models import Queue
from tests.conftest import require_service
from tests.processes.conftest import free_port, port_open, wait_for
from workers.engine import states as S

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.spark_deployment]


def test_a_delivery_run_applies_the_rules_on_a_standalone_cluster(processes, tmp_path):
    require_service("java", path="java")
    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    port = free_port()
    processes.start_command(
        [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            port,
            "--webui-port",
            free_port(),
        ],
        log=tmp_path / "master.log",
    )
    wait_for(lambda: port_open(port), timeout=90, what="the Spark master")
    processes.start_command(
        [
            spark_class,
            "org.apache.spark.deploy.worker.Worker",
            f"spark://127.0.0.1:{port}",
            "--host",
            "127.0.0.1",
            "--cores",
            "2",
            "--memory",
            "1g",
            "--webui-port",
            free_port(),
        ],
        log=tmp_path / "worker.log",
    )
    wait_for(
        lambda: (
            "Successfully registered with master"
            in (tmp_path / "worker.log").read_text(errors="replace")
        ),
        timeout=90,
        what="the Spark worker to register",
    )

    Queue.objects.create(name="orders", handler="tests.handlers_for_tests.scripted")
    bodies = {
        "good-1": "ok",
        "good-2": "ok",
        "flaky": "transient",
        "bad": "permanent",
        "crasher": "crash",
    }
    result = messages_ingest(
        records=[{"id": m, "queue": "orders", "body": b} for m, b in bodies.items()],
        source="test",
    )
    assert result.accepted == 5

    deliver = processes.start(
        "manage.py",
        "deliver",
        "--until-idle",
        log=tmp_path / "deliver.log",
        # Five messages would be delivered without Spark (DELIVERY_LOCAL_MAX): on the cluster.
        env={"SPARK_MASTER": f"spark://127.0.0.1:{port}", "DELIVERY_LOCAL_MAX": "0"},
    )
    assert deliver.wait(timeout=600) == 0, (tmp_path / "deliver.log").read_text()
    assert re.search(r"^run \d+: 5 claimed", (tmp_path / "deliver.log").read_text(), re.M)
    states = {m: message_detail(message_id=m) for m in bodies}
    assert states["good-1"]["state"] == states["good-2"]["state"] == S.DLVD
    assert states["flaky"]["state"] == S.WAIT  # its retry is a minute away
    assert states["bad"]["state"] == S.NDLV
    assert states["crasher"]["state"] == S.NDLV
    assert states["crasher"]["reason"].startswith(S.REASON_BLACKLISTED)
    # The handlers ran in an executor the cluster's worker launched for the run.
    assert "Asked to launch executor app-" in (tmp_path / "worker.log").read_text(errors="replace")
