"""After a real delivery run (the Spark job, its commit), the delivery counters moved by what the
run did; and after a refresh, the quarantined counts are the dashboard's."""

from datetime import timedelta

import pytest

from console.browse.counts import dashboard_stats
from console.delivery.models import DeliveryRun
from console.readmodels.execution import read_models_refresh
from tests.delivery.conftest import both_paths
from tests.metrics.conftest import scrape, value

pytestmark = [pytest.mark.spark]

SEQUENCE = "tests.handlers_for_tests.sequence"


@both_paths
def test_a_run_moves_the_attempt_counters_by_what_it_did(engine):
    engine.queue("orders", handler=SEQUENCE, max_failed_deliveries=5)
    engine.ingest("orders", ["ok"] * 3, prefix="fine")
    engine.ingest("orders", ["p"] * 2, prefix="refused")
    engine.ingest("orders", ["t"] * 4, prefix="down")
    before = scrape()

    run = engine.deliver(queues=["orders"])
    after = scrape()

    assert run.status == DeliveryRun.COMMITTED

    def moved(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("antidote_delivery_attempts_total", outcome="DLVD") == 3
    assert moved("antidote_delivery_attempts_total", outcome="NDLV") == 2
    assert moved("antidote_delivery_attempts_total", outcome="WAIT") == 4
    assert moved("antidote_delivery_attempts_total", outcome="TBDL") == 0
    assert moved("antidote_delivery_runs_total", status="committed") == 1
    assert moved("antidote_delivery_runs_total", status="failed") == 0
    assert moved("antidote_delivery_run_duration_seconds_count") == 1
    took = (run.finished_at - run.started_at).total_seconds()
    assert moved("antidote_delivery_run_duration_seconds_sum") == pytest.approx(took)
    assert moved("antidote_delivery_run_duration_seconds_bucket", le="+Inf") == 1
    # Every handler call of the run, timed: 9 calls (the failures too) in the queue's histogram.
    assert moved("antidote_handler_duration_seconds_count", queue="orders") == 9
    assert moved("antidote_handler_duration_seconds_bucket", queue="orders", le="+Inf") == 9
    assert 0 < moved("antidote_handler_duration_seconds_sum", queue="orders") < took
    assert moved("antidote_handler_duration_seconds_bucket", queue="orders", le="300.0") == 9


def test_after_a_refresh_quarantined_per_queue_is_the_dashboards(engine):
    engine.queue("orders", handler=SEQUENCE, max_failed_deliveries=5)
    engine.queue("refunds", handler=SEQUENCE, max_failed_deliveries=5)
    engine.ingest("orders", ["ok", "p", "p", "t"], prefix="orders")
    engine.ingest("refunds", ["p", "ok"], prefix="refunds")
    engine.deliver(queues=["orders", "refunds"])
    engine.deliver(at=engine.now + timedelta(days=1), queues=["orders"])
    read_models_refresh(spark=engine.spark)

    scraped = scrape()

    shown = {queue: dict(counts).get("NDLV", 0) for queue, counts in dashboard_stats()["per_queue"]}
    assert shown == {"orders": 2, "refunds": 1}
    for queue, n in shown.items():
        assert value(scraped, "antidote_quarantined", queue=queue) == n
        assert value(scraped, "antidote_quarantine_oldest_age_seconds", queue=queue) > 0
    assert value(scraped, "antidote_refresh_lag_seconds") == 0
