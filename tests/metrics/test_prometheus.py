"""Debian's Prometheus scrapes a live console once a second (with a bearer token, as a scraper
from another host would), and its HTTP API answers what the console says: quarantined per queue
as the dashboard counts it, and after a real delivery run, attempt counters moved by what the
run did."""

import os
import shutil
from urllib.parse import urlparse

import pytest
import requests

from console.browse.counts import dashboard_stats
from console.readmodels.execution import read_models_refresh
from tests.conftest import require_service
from tests.processes.conftest import Processes, free_port, wait_for

pytestmark = [pytest.mark.services, pytest.mark.spark, pytest.mark.slow]

SEQUENCE = "tests.handlers_for_tests.sequence"
TOKEN = "prometheus-scrapes-with-this-token"
CONFIG = """\
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: antidote
    metrics_path: /metrics
    authorization:
      credentials: {token}
    static_configs:
      - targets: ["{target}"]
"""


@pytest.fixture
def prometheus(tmp_path, live_server, settings):
    """Prometheus on a free port, scraping the live server; its API's root URL."""
    require_service("Prometheus (Debian's prometheus package)", path="prometheus")
    settings.METRICS_TOKEN = TOKEN
    config = tmp_path / "prometheus.yml"
    config.write_text(CONFIG.format(token=TOKEN, target=urlparse(live_server.url).netloc))
    port = free_port()
    log = tmp_path / "prometheus.log"
    started = Processes(dict(os.environ))
    started.start_command(
        [
            shutil.which("prometheus") or "/usr/bin/prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        log=log,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(url), timeout=60, what=f"Prometheus ready (see {log})")
        wait_for(
            lambda: _query(url, 'up{job="antidote"}') == {(): 1.0},
            timeout=60,
            what=f"a successful scrape, up == 1 (see {log})",
        )
        yield url
    finally:
        started.stop_all()


def _ready(url):
    try:
        return requests.get(f"{url}/-/ready", timeout=2).status_code == 200
    except requests.ConnectionError:
        return False


def _query(url, query, label=None):
    """{(label's value,) or (): value} of an instant query."""
    answer = requests.get(f"{url}/api/v1/query", params={"query": query}, timeout=5).json()
    assert answer["status"] == "success", answer
    return {
        ((r["metric"].get(label),) if label else ()): float(r["value"][1])
        for r in answer["data"]["result"]
    }


def test_prometheus_reads_what_the_console_shows(engine, prometheus):
    engine.queue("orders", handler=SEQUENCE, max_failed_deliveries=5)
    engine.queue("refunds", handler=SEQUENCE, max_failed_deliveries=5)
    engine.ingest("orders", ["ok", "p", "p", "t"], prefix="orders")
    engine.ingest("refunds", ["p", "ok"], prefix="refunds")
    engine.deliver(queues=["orders", "refunds"])
    read_models_refresh(spark=engine.spark)
    shown = {q: dict(counts).get("NDLV", 0) for q, counts in dashboard_stats()["per_queue"]}
    assert shown == {"orders": 2, "refunds": 1}

    def scraped_quarantined():
        quarantined = _query(prometheus, "antidote_quarantined", "queue")
        return {q: quarantined.get((q,)) for q in shown} == shown

    wait_for(scraped_quarantined, timeout=60, what="antidote_quarantined as the dashboard shows it")

    runs = 'antidote_delivery_runs_total{status="committed"}'
    before = _query(prometheus, "antidote_delivery_attempts_total", "outcome")
    runs_before = _query(prometheus, runs)[()]
    engine.ingest("orders", ["ok", "ok", "p"], prefix="more")
    engine.deliver(queues=["orders"])
    wait_for(
        lambda: _query(prometheus, runs)[()] == runs_before + 1, timeout=60, what="the run's scrape"
    )
    after = _query(prometheus, "antidote_delivery_attempts_total", "outcome")

    moved = {outcome: n - before.get(outcome, 0) for outcome, n in after.items()}
    assert moved[("DLVD",)] == 2
    assert moved[("NDLV",)] == 1
    assert moved[("WAIT",)] == 0
    assert set(moved.values()) <= {0, 1, 2}
