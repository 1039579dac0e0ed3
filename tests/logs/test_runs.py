"""The workers' lines name what they are about: a delivery run's its run (as its events in the
lake) and its queue, a refresh's its run, a decision's execution its request, a broker source's
loop its source and queue, a Celery task its id. Real runs on the real Spark session."""

import io
import json
import logging
import threading

import pytest
from celery.signals import after_setup_logger
from django.db import connection

from console.ingest.consumers import source_consume
from console.queues.models import BrokerSource
from console.queues.services import queues_load
from tests.decisions.desk import make_desk
from tests.processes.conftest import wait_for
from workers.celery import app
from workers.logcontext import log_context


def _with(lines, **fields):
    return [line for line in lines if all(line.get(k) == v for k, v in fields.items())]


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


@pytest.mark.spark
@pytest.mark.parametrize("local_max", [0, 1000], ids=["spark", "local"])
def test_a_delivery_run_logs_lines_carrying_its_run_id_and_queue(
    desk, settings, json_lines, local_max
):
    settings.DELIVERY_LOCAL_MAX = local_max
    desk.queue("orders")
    desk.ingest("orders", ["ok", "ok", "permanent"])

    run = desk.deliver()

    lines = _with(json_lines(), run_id=str(run.id))
    assert {line["queue"] for line in lines} == {"orders"}
    [line] = _with(lines, logger="console.delivery.execution")
    assert line["message"] == f"delivery run {run.id}: 3 claimed; DLVD 2, NDLV 1"


@pytest.mark.spark
def test_a_refresh_and_a_decision_log_lines_carrying_their_run_and_request(desk, json_lines):
    desk.queue("orders")
    ids = desk.quarantine("orders", ["permanent", "permanent"])
    refreshes = _with(json_lines(), logger="console.readmodels.execution")

    request = desk.execute(desk.request({"kind": "selection", "ids": ids}))

    assert request.status == "done"
    assert refreshes and all(line["run_id"].startswith("refresh:") for line in refreshes)
    lines = _with(json_lines(), action_request_id=request.id)
    assert {line["run_id"] for line in lines} == {f"request:{request.id}"}  # as its events'
    [line] = _with(lines, logger="console.decisions.execution")
    assert line["message"] == f"request {request.id} done: 2 of 2 done, 0 skipped, 0 failed"
    assert "request_id" not in line and "queue" not in line


def test_a_broker_sources_loop_logs_lines_carrying_its_source_and_queue(
    transactional_db, json_lines, monkeypatch
):
    monkeypatch.delenv("ANTIDOTE_TEST_LOGS_URL", raising=False)
    queues_load(
        data={
            "queues": [{"name": "intake", "handler": "workers.brokers.intake.dead_letter"}],
            "sources": [
                {
                    "name": "orders-dlq",
                    "url_env": "ANTIDOTE_TEST_LOGS_URL",
                    "broker_queue": "orders.dlq",
                    "queue": "intake",
                }
            ],
        }
    )
    source = BrokerSource.objects.select_related("queue").get(name="orders-dlq")
    stop = threading.Event()

    def run():
        try:
            source_consume(source, stop=stop, say=lambda line: None)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        wait_for(lambda: _with(json_lines(), source="orders-dlq"), timeout=30, what="a line")
    finally:
        stop.set()
        thread.join()

    line = _with(json_lines(), source="orders-dlq")[0]
    assert (line["queue"], line["level"]) == ("intake", "WARNING")
    assert "ANTIDOTE_TEST_LOGS_URL" in line["message"]


@app.task(name="tests.logs.says_hello")
def _says_hello():
    logging.getLogger("tests.logs").info("hello from a task")


def test_a_celery_tasks_lines_carry_its_id_and_only_its_own(json_lines):
    done = _says_hello.apply()
    logging.getLogger("tests.logs").info("after the task")

    lines = _with(json_lines(), logger="tests.logs")
    assert [(line["message"], line.get("task_id")) for line in lines] == [
        ("hello from a task", done.id),
        ("after the task", None),
    ]


def test_celerys_own_handler_takes_the_json_format_and_the_context(settings):
    # The worker and beat replace the root logger's handler with theirs, then say so.
    settings.LOG_FORMAT = "json"
    stream = io.StringIO()
    logger = logging.getLogger("tests.logs.celery")
    logger.addHandler(logging.StreamHandler(stream))
    logger.propagate = False
    try:
        after_setup_logger.send(
            sender=None, logger=logger, loglevel=logging.INFO, logfile=None, format="", colorize=0
        )
        with log_context(queue="orders"):
            logger.warning("a worker's line")
    finally:
        logger.handlers.clear()
        logger.propagate = True

    line = json.loads(stream.getvalue())
    assert (line["message"], line["queue"], line["process"]) == (
        "a worker's line",
        "orders",
        settings.PROCESS_NAME,
    )
