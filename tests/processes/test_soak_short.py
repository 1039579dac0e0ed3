"""The soak's short version (issue 29; the whole soak is `python -m bench soak`, bench/soak.py):
a spark worker, a default worker and beat started as the Procfile starts them, some two hundred
messages ingested at a steady rate, the spark worker SIGKILLed twice while a delivery run holds
messages (with its JVM and Spark's Python workers), each time started again. Once the product has
settled: nothing lost, no delivery without a successful handler call, no success lost, and every
count the console shows equal to a recount from the lake (manage.py counts_verify, and the
dashboard's counts per queue and state against the ledger read here).

The same parts as the soak's; only its size, the processes (no web: the messages go through the
ingest service) and the intervals (a short lease, frequent sweeps and runs, so that it settles
in minutes) differ."""

from urllib.parse import urlsplit

import pytest
from django.conf import settings as django_settings

from bench.soak import Fleet, Killer, Load, service_sender, settle
from bench.soak_checks import (
    Facts,
    check_counts,
    check_delivered_after_success,
    check_no_success_lost,
    check_nothing_lost,
    plan,
    queues_define,
)
from tests.conftest import require_service
from workers.celery import app

# On production's database: on the embedded one, test_spark_worker_killed kills the same worker
# mid-run and checks that nothing is lost (CI's two runs split the two).
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.one_database("postgresql")]

# Five a second, as the soak sends them; long enough for a restarted worker to be killed again
# under load (the messages ingested while it started are the run it is killed in).
MESSAGES = 180
LOAD_SECONDS = 36
# The kills, in seconds from the load's start: each waits for a delivery run holding messages.
KILLS = (LOAD_SECONDS / 3, 2 * LOAD_SECONDS / 3)
# Bounds on waits, so that a product that never settles fails with what was left instead of
# hanging; not measures of speed.
RUN_PATIENCE = 120
SETTLE_PATIENCE = 900
SETTINGS = {
    "LEASE_SECONDS": "20",
    "SWEEP_INTERVAL_SECONDS": "3",
    "DELIVERY_INTERVAL_SECONDS": "3",
    "REFRESH_INTERVAL_SECONDS": "5",
    # Drift found by a scheduled check stays for the final one to see.
    "COUNTS_VERIFY_REPAIR": "false",
}


def _require_broker():
    url = django_settings.CELERY_BROKER_URL
    if url.startswith("redis"):
        parts = urlsplit(url)
        require_service("Redis", host=parts.hostname, port=parts.port or 6379)


@pytest.mark.timeout(1800)
def test_after_two_kills_of_the_spark_worker_under_load_nothing_is_lost_and_counts_equal_a_recount(
    processes, tmp_path
):
    _require_broker()
    calls = tmp_path / "calls"
    calls.mkdir()
    queues_define(calls)
    planned = plan(MESSAGES, prefix="short")
    env = {**processes.env, **SETTINGS}
    app.control.purge()
    fleet = Fleet(env, tmp_path, kinds=("spark", "worker", "beat"))
    fleet.start_all()
    try:
        load = Load(planned, service_sender(), seconds=LOAD_SECONDS)
        killer = Killer(fleet, KILLS, order=("spark",), busy_wait=RUN_PATIENCE)
        load.start()
        killer.start()
        load.join()
        killer.join()
        assert load.error is None, load.error
        assert killer.error is None, killer.error
        assert not load.refused, load.refused[:5]
        # Each kill while a delivery run of the worker killed held messages.
        assert [(kind, busy) for _, kind, busy in killer.log] == [("spark", True)] * 2

        _, left = settle(timeout=SETTLE_PATIENCE)
        assert not left, f"not settled after {SETTLE_PATIENCE} s; left: {left}"

        facts = Facts.gather(planned, load.accepted, calls)
        for check in (
            check_nothing_lost(facts),
            check_delivered_after_success(facts),
            check_no_success_lost(facts),
            check_counts(facts, env),
        ):
            assert check.ok, f"{check.name}: {check.detail}; for example {check.examples}"
        assert not fleet.unexpected, f"processes died unkilled: {fleet.unexpected}"
    finally:
        fleet.stop_all()
