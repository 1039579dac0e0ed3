"""/metrics benchmark (issue 33): the server time of a Prometheus scrape over N quarantined
messages (default 1M, the console benchmark's seed: 20 queues, 50 failure groups), and what
scraping costs the dashboard, measured side by side.

Rows: how long the refresh's task takes to find each queue's oldest quarantined message (it is
found there, off the scrape: console.readmodels.oldest); the scrape alone (p50, p95 of
BENCH_REQUESTS requests after a few warm-up ones, and the CPU milliseconds of this process and
the database server per request); the dashboard alone; the dashboard again while another thread
scrapes without pause (far more often than any Prometheus would: the upper bound of the cost),
and the ratio of the two. Then the case finding the oldest does worst on: a queue whose older
rows are all failed (FAIL), so the probe walks past them to its newest quarantined message; the
task's time for it, and the scrape after it. Runs on SQLite, then on PostgreSQL when it answers.

Goal on PostgreSQL at 1M: scrape p95 <= 100 ms. BENCH_MESSAGES overrides N (e.g. 50000)."""

import threading
import time

from bench.support import (
    CpuMeter,
    console_bench_setup,
    on_both_databases,
    percentile,
    rows_print,
)

WARMUP = 3
PROCESS_KINDS = ("web", "spark", "worker", "beat", "sources")


def _timed_gets(client, url, requests, **extra):
    """Milliseconds of each GET after the warm-up, and the CpuMeter of them all (this process
    and the database server)."""
    for _ in range(WARMUP):
        client.get(url, **extra)
    samples = []
    with CpuMeter() as spent:
        for _ in range(requests):
            started = time.perf_counter()
            response = client.get(url, **extra)
            samples.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, (url, response.status_code)
    return samples, spent


def _scrape_without_pause(stop, scrapes):
    from django.db import connection
    from django.test import Client

    client = Client()
    try:
        while not stop.is_set():
            assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
            scrapes.append(1)
    finally:
        connection.close()


def _beats():
    """A process of each kind, beating: their rows are part of every scrape."""
    from console.processes.services import process_beat_start

    for pid, kind in enumerate(PROCESS_KINDS, start=1000):
        process_beat_start(kind=kind, host="bench-host", pid=pid)


def _keep_timed():
    """Seconds the refresh's task takes to find the oldest quarantined message of every queue
    whose counts moved (console.readmodels.oldest)."""
    from console.readmodels.oldest import quarantine_oldest_keep

    started = time.perf_counter()
    quarantine_oldest_keep()
    return round(time.perf_counter() - started, 3)


def _history_queue(queue):
    """All but the newest quarantined message of `queue` failed: the oldest-quarantined probe
    walks the queue's failure index past every one of them."""
    from django.utils import timezone

    from console.readmodels.models import MessageIndex, MessageState, QueueStat
    from workers.engine.states import NDLV

    rows = MessageIndex.objects.filter(queue=queue, state=NDLV).order_by("-last_failure_at")
    newest = rows.values_list("message_id", flat=True).first()
    ids = MessageIndex.objects.filter(queue=queue).exclude(message_id=newest)
    changed = MessageState.objects.filter(message_id__in=ids.values("message_id")).update(
        state="FAIL"
    )
    # As a decision's chunk would: the queue's counts moved.
    QueueStat.objects.filter(queue=queue).update(updated_at=timezone.now())
    return changed


def run_here():
    n, requests, backend, cores = console_bench_setup()
    from django.test import Client

    from bench import console_seed

    console_seed.seed_fresh("metrics", n)
    _beats()
    kept = _keep_timed()

    scraper = Client()
    operator = Client()
    operator.force_login(console_seed.operator_user())
    rows = []

    def row(name, samples=None, cpu=None, **more):
        found = {"benchmark": name, "backend": backend, "messages": n}
        if samples is not None:
            found.update(
                requests=len(samples),
                p50_ms=round(percentile(samples, 50), 1),
                p95_ms=round(percentile(samples, 95), 1),
                **cpu.per_request(len(samples)),
            )
        rows.append({**found, **more, "cores": cores})

    row("oldest quarantined, found for every queue (the refresh's task)", seconds=kept)
    scrape, cpu = _timed_gets(scraper, "/metrics", requests, REMOTE_ADDR="127.0.0.1")
    row("scrape /metrics", scrape, cpu, goal="p95 <= 100 ms (PostgreSQL, 1M)")
    alone, cpu = _timed_gets(operator, "/", requests)
    row("dashboard alone", alone, cpu)

    stop, scrapes = threading.Event(), []
    thread = threading.Thread(target=_scrape_without_pause, args=(stop, scrapes), daemon=True)
    thread.start()
    try:
        beside, cpu = _timed_gets(operator, "/", requests)
    finally:
        stop.set()
        thread.join()
    row("dashboard, scraped without pause", beside, cpu, scrapes_meanwhile=len(scrapes))
    row(
        "dashboard p95: scraped / alone",
        ratio=round(percentile(beside, 95) / percentile(alone, 95), 2),
    )

    failed = _history_queue("bench.q00")
    console_seed.analyze()
    row(f"oldest quarantined, found again for a queue of {failed:,} failed", seconds=_keep_timed())
    worst, cpu = _timed_gets(scraper, "/metrics", requests, REMOTE_ADDR="127.0.0.1")
    row(
        f"scrape /metrics, one queue's {failed:,} older rows failed",
        worst,
        cpu,
        goal="p95 <= 100 ms (PostgreSQL, 1M)",
    )
    return rows


def run():
    return on_both_databases(run_here, "bench.bench_metrics")


if __name__ == "__main__":
    rows_print(run_here())
