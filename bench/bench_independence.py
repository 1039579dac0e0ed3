"""R16: a healthy queue's time from enqueue to DLVD while another queue's handler hangs, against
the same with no hanging queue, side by side in one run of the real processes (a Celery spark
worker in threads, a default worker and beat, as `make run` starts them).

Goal (issue 10): the ratio of the two is at most 1.5. Each scenario's CPU µs a message is that of
this process and every process it started (the workers, the spark worker's JVM and Python
workers, the handlers' children), and the database's and Celery broker's servers when they are
PostgreSQL or Redis (bench.support.CpuMeter), over its messages' ingest to delivery."""

import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.support import (
    ROOT,
    CpuMeter,
    cpu_per_message,
    delivered_at,
    django_setup,
    fresh_state,
    messages_from_env,
    processes_stop,
    product_processes,
    product_servers,
)

INTERVAL = 2  # DELIVERY_INTERVAL_SECONDS of the processes: beat's tick
SPACING = 1.0  # seconds between two healthy messages
ROUNDS = 2


def _latencies(prefix, count, *, timeout=600):
    """Ingest `count` healthy messages one at a time; each one's seconds from its enqueue to
    its DLVD event."""
    from console.ingest.services import messages_ingest

    sent = {}
    for i in range(count):
        message_id = f"{prefix}-{i:03d}"
        result = messages_ingest(
            records=[{"id": message_id, "queue": "healthy", "body": "{}"}], source="bench"
        )
        assert result.accepted == 1, result.errors
        sent[message_id] = datetime.now(UTC)
        time.sleep(SPACING)
    deadline = time.monotonic() + timeout
    done = {}
    while len(done) < len(sent):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(sent) - len(done)} healthy message(s) not delivered")
        for message_id in set(sent) - set(done):
            at = delivered_at(message_id)
            if at is not None:
                done[message_id] = (at - sent[message_id]).total_seconds()
        time.sleep(0.5)
    return list(done.values())


def _row(scenario, latencies, cpu):
    ordered = sorted(latencies)
    return {
        "scenario": scenario,
        "messages": len(ordered),
        "p50 s": round(statistics.median(ordered), 2),
        "p95 s": round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 2),
        "max s": round(ordered[-1], 2),
        **cpu_per_message(cpu, len(ordered)),
    }


def run():
    django_setup()
    from django.conf import settings
    from django.db import connection

    from console.browse.selectors import message_detail
    from console.ingest.services import messages_ingest
    from console.queues.models import Queue

    # Messages per scenario: one a second, so a large BENCH_MESSAGES is capped.
    count = min(messages_from_env(20), 60)
    lake = fresh_state("independence")
    Queue.objects.create(name="slow", handler="tests.handlers_for_tests.held")
    Queue.objects.create(name="healthy", handler="workers.demo.handlers.noop")
    folder = Path(tempfile.mkdtemp(prefix="bench-independence-"))
    db = connection.settings_dict
    env = {
        **os.environ,
        "VAR_DIR": str(settings.VAR_DIR),
        "LAKE_URI": str(lake),
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "DELIVERY_INTERVAL_SECONDS": str(INTERVAL),
        "REFRESH_ON_COMMIT": "false",
        "REFRESH_INTERVAL_SECONDS": "3600",
        "INBOX_POLL_SECONDS": "3600",
    }
    if db["ENGINE"].endswith("sqlite3"):
        env["DATABASE_URL"] = f"sqlite:///{db['NAME']}"
    started = product_processes(env, folder)
    quiet, hanging, states = [], [], []
    cpu = {"quiet": 0.0, "hanging": 0.0}

    def measured(scenario, prefix):
        with CpuMeter(servers=product_servers(broker=True)) as meter:
            latencies = _latencies(prefix, count // ROUNDS)
        cpu[scenario] += meter.cpu_seconds
        return latencies

    try:
        # Warm up: the spark worker's JVM and first jobs.
        _latencies("warm", 3)
        # The two scenarios alternate, so that the machine's load weighs on both alike.
        for round_ in range(ROUNDS):
            quiet += measured("quiet", f"quiet{round_}")
            flag = folder / f"hold{round_}"
            flag.touch()
            hang = {
                "id": f"hang-{round_}",
                "queue": "slow",
                "body": "{}",
                "headers": {"hold-while": str(flag)},
            }
            messages_ingest(records=[hang], source="bench")
            # The slow queue's run has the message in its handler before the measure starts.
            deadline = time.monotonic() + 300
            while message_detail(message_id=hang["id"])["state"] != "DLNG":
                if time.monotonic() > deadline:
                    raise RuntimeError("the slow queue's run never claimed its message")
                time.sleep(0.5)
            hanging += measured("hanging", f"hanging{round_}")
            states.append(message_detail(message_id=hang["id"])["state"])
            flag.unlink()
            while message_detail(message_id=hang["id"])["state"] != "DLVD":
                time.sleep(0.5)
    finally:
        for flag in folder.glob("hold*"):
            flag.unlink()
        processes_stop(started)
    still = ",".join(sorted(set(states)))
    quiet_row = _row("no queue hangs", quiet, cpu["quiet"])
    hanging_row = _row("another queue hangs", hanging, cpu["hanging"])
    ratio = round(hanging_row["p50 s"] / quiet_row["p50 s"], 2) if quiet_row["p50 s"] else None
    yield {**quiet_row, "ratio p50": 1.0, "cores": os.cpu_count()}
    yield {
        **hanging_row,
        "ratio p50": ratio,
        "hung message": still,
        "goal": "ratio <= 1.5",
        "cores": os.cpu_count(),
    }
