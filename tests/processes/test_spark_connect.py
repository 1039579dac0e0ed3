"""Spark Connect (SPARK_REMOTE=sc://...): a real Connect server started from the pyspark wheel,
and the product's Spark work carried out through it by its own processes, with SPARK_REMOTE in
their environment: a delivery run (`manage.py deliver`), a refresh of the read models
(`manage.py refresh`), then a bulk fail (planned by a Spark job) and a lake query on a Celery
spark worker. The test's own process starts no Spark session: a process has one, of one kind
(workers.spark)."""

import re
import sys
import time
from pathlib import Path

import pyarrow.compute as pc
import pyspark
import pytest

from console.audit.models import AuditEntry
from console.browse.selectors import message_detail
from console.decisions.models import ActionRequest
from console.decisions.services import Action, action_request_approve, action_request_create
from console.ingest.services import messages_ingest
from console.lake.models import LakeCommit
from console.lake.services import lake
from console.lakequery.models import LakeQuery
from console.lakequery.selectors import lake_query_results
from console.lakequery.services import lake_query_create
from console.queues.models import Queue
from console.readmodels.models import MessageIndex
from tests.conftest import require_service
from tests.decisions.desk import quarantine_directly
from tests.delivery.conftest import T0
from tests.processes.conftest import free_port, port_open, wait_for
from tests.processes.test_spark_worker_killed import WORKER
from workers.celery import app
from workers.engine import states as S

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.spark_deployment]

# One more than the decisions execution plans with pyarrow: the plan runs on Spark.
BULK = 10_001


def connect_server(processes, tmp_path):
    """A Spark Connect server on a free port of the loopback, started as the Spark Connect guide
    (docs/guides/spark-connect.md) says: the project on the Python workers' path, this interpreter
    as their Python. Progress is reported every 100 ms (2 s by default) so that a short query
    shows some."""
    port = free_port()
    spark_submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    processes.start_command(
        [
            spark_submit,
            "--class",
            "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--master",
            "local[2]",
            "--driver-memory",
            "1g",
            "--conf",
            "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf",
            f"spark.connect.grpc.binding.port={port}",
            "--conf",
            "spark.driver.host=127.0.0.1",
            "--conf",
            "spark.driver.bindAddress=127.0.0.1",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.task.maxFailures=1",
            "--conf",
            "spark.connect.progress.reportInterval=100ms",
        ],
        log=tmp_path / "connect-server.log",
        env={"PYSPARK_PYTHON": sys.executable, "SPARK_CONNECT_MODE": "0"},
    )
    return port


def test_the_product_runs_through_a_spark_connect_server(processes, tmp_path, settings, personas):
    require_service("java", path="java")
    started = time.monotonic()
    port = connect_server(processes, tmp_path)
    remote = {"SPARK_REMOTE": f"sc://127.0.0.1:{port}", "REFRESH_ON_COMMIT": "false"}
    settings.REFRESH_ON_COMMIT = False

    # While the server starts: the queues and messages, with pyarrow (no Spark here).
    Queue.objects.create(name="orders", handler="tests.handlers_for_tests.scripted")
    # R11 sends a queue with disable_after to one partition in order: the engine asks the
    # server for its default parallelism (no SparkContext over Connect).
    Queue.objects.create(
        name="invoices", handler="tests.handlers_for_tests.scripted", disable_after=100
    )
    Queue.objects.create(name="bulk", handler="tests.handlers_for_tests.always_ok")
    bodies = {f"good-{i:02d}": "ok" for i in range(10)}
    bodies |= {f"flaky-{i}": "transient" for i in range(4)}
    bodies |= {f"bad-{i}": "permanent" for i in range(4)}
    bodies |= {"crasher": "crash"}
    invoices = {f"inv-{i}": "ok" for i in range(4)} | {"inv-bad": "permanent"}
    records = [{"id": m, "queue": "orders", "body": b} for m, b in bodies.items()]
    records += [{"id": m, "queue": "invoices", "body": b} for m, b in invoices.items()]
    assert messages_ingest(records=records, source="test").accepted == len(records) == 24
    app.control.purge()

    wait_for(lambda: port_open(port), timeout=120, what="the Spark Connect server")
    server_up = time.monotonic()
    print(f"Connect server up in {server_up - started:.1f} s")

    # 1. A delivery run, in its own process, through the server. Small isolation batches: the
    # crasher's batch is halved down to it in three runs (R8), not six. Through the server, not
    # without Spark as a run this small would be (DELIVERY_LOCAL_MAX).
    deliver = processes.start(
        "manage.py",
        "deliver",
        "--until-idle",
        log=tmp_path / "deliver.log",
        env={**remote, "DELIVERY_BATCH_SIZE": "4", "DELIVERY_LOCAL_MAX": "0"},
    )
    assert deliver.wait(timeout=300) == 0, (tmp_path / "deliver.log").read_text()
    delivered = time.monotonic()
    log = (tmp_path / "deliver.log").read_text()
    assert re.search(r"^run \d+: 24 claimed", log, re.M), log
    states = {m: message_detail(message_id=m) for m in [*bodies, *invoices]}
    assert {states[m]["state"] for m in bodies if m.startswith("good-")} == {S.DLVD}
    assert {states[m]["state"] for m in invoices if m != "inv-bad"} == {S.DLVD}
    assert {states[m]["state"] for m in bodies if m.startswith("flaky-")} == {S.WAIT}
    assert {states[m]["state"] for m in bodies if m.startswith("bad-")} == {S.NDLV}
    assert states["inv-bad"]["state"] == S.NDLV
    # The crash killed the child that the server's Python worker forked for its batch; isolated
    # in ever smaller batches, it was blacklisted (R8, R10).
    assert states["crasher"]["state"] == S.NDLV
    assert states["crasher"]["reason"].startswith(S.REASON_BLACKLISTED)
    assert Queue.objects.get(name="invoices").enabled

    # 2. A refresh of the read models, in its own process, through the server.
    refresh = processes.start("manage.py", "refresh", log=tmp_path / "refresh.log", env=remote)
    assert refresh.wait(timeout=300) == 0, (tmp_path / "refresh.log").read_text()
    refreshed = time.monotonic()
    assert "rows changed" in (tmp_path / "refresh.log").read_text()
    indexed = dict(
        MessageIndex.objects.filter(queue__in=["orders", "invoices"]).values_list(
            "message_id", "state"
        )
    )
    assert indexed["bad-0"] == indexed["inv-bad"] == indexed["crasher"] == S.NDLV
    assert indexed["flaky-0"] == S.WAIT
    assert MessageIndex.objects.filter(state=S.NDLV).count() == 4 + 1 + 1

    # 3. A bulk fail of every quarantined message, planned on Spark (more than SMALL_PLAN; a
    # reprocess plans from the index, without Spark), carried out by a spark worker whose
    # session is the server's. Most were quarantined straight into the ledger and the index,
    # without their handler.
    quarantine_directly("bulk", [f"bulk-{i:05d}" for i in range(BULK)], at=T0)
    # Their ingest woke delivery (a run task for "bulk"): only the request is for this worker.
    app.control.purge()
    worker = processes.start(
        *WORKER, "-n", "spark-connect@%h", log=tmp_path / "worker.log", env=remote
    )
    request = action_request_create(
        actor=personas["operator"],
        scope={"kind": "filter", "filters": {"state": S.NDLV}},
        action=Action(kind="fail"),
        comment="these will never go through",
    )
    assert request.count == BULK + 6
    request = action_request_approve(actor=personas["approver"], request=request)

    def request_done():
        request.refresh_from_db()
        assert request.status not in (ActionRequest.FAILED, ActionRequest.CANCELLED), request.error
        return request.status == ActionRequest.DONE

    wait_for(request_done, timeout=300, what="the bulk fail on the spark worker")
    decided = time.monotonic()
    assert (request.done, request.skipped, request.failed) == (BULK + 6, 0, 0)
    started = AuditEntry.objects.get(action="execution.started", target_id=str(request.id))
    assert started.details["plan"] == "spark"
    assert MessageIndex.objects.filter(state=S.NDLV).count() == 0
    assert MessageIndex.objects.filter(queue="bulk", state=S.FAIL).count() == BULK
    paths = list(LakeCommit.objects.filter(dataset="events").values_list("path", flat=True))
    events = lake().read_arrow("events", paths, columns=["message_id", "run_id"])
    by_request = events.filter(pc.equal(events.column("run_id"), f"request:{request.id}"))
    assert by_request.num_rows == BULK + 6

    # 4. A lake query on the same worker: its progress comes from the server's reports.
    query = lake_query_create(
        actor=personas["operator"],
        criteria={"queues": ["orders", "invoices"], "body_regex": "^(ok|perm)"},
    )
    readings = []

    def query_over():
        row = LakeQuery.objects.values("status", "progress", "error").get(id=query.id)
        assert row["status"] != LakeQuery.FAILED, row["error"]
        if row["status"] == LakeQuery.RUNNING:
            readings.append(row["progress"])
        return row["status"] == LakeQuery.DONE

    wait_for(query_over, timeout=300, what="the lake query on the spark worker")
    queried = time.monotonic()
    query.refresh_from_db()
    assert (query.matched, query.progress) == (10 + 4 + 4 + 1, 100)
    assert query.scanned == BULK + 24
    found = {row["message_id"] for row in lake_query_results(query=query, limit=100).rows}
    assert found == {m for m, b in [*bodies.items(), *invoices.items()] if b in ("ok", "permanent")}
    # At least one reading between the start and the end, as the console shows it.
    assert any(0 < p < 100 for p in readings), readings
    processes.kill(worker)
    print(
        f"deliver {delivered - server_up:.1f} s, refresh {refreshed - delivered:.1f} s, "
        f"bulk fail {decided - refreshed:.1f} s, lake query {queried - decided:.1f} s, "
        f"progress readings {sorted(set(readings))}"
    )
