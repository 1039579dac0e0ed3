"""The product at scale on one machine (issue 11): a documented run, not part of `make bench`'s
default set (it takes long and a lot of disk); run it by name: `python -m bench scale`.

N messages (BENCH_MESSAGES, default 10M) go through the product's own paths, in this process:
1. ingest from JSON Lines files (console.ingest.services.ingest_file): 90 % into `bench.scale`,
   one in a thousand of them poison (a required field missing: PermanentFailure), and 10 % into
   `bench.scale.bad`, a producer's bug that the same handler refuses, every one;
2. one delivery run on Spark over all of them: the poison and the bad producer's messages end
   in NDLV, the rest DLVD; then the compactions the spark worker runs after every run;
3. a full refresh of the read models (what a new console or a lost database pays), then a
   delivery run of 100 new messages and the refresh of what it changed (what every run pays;
   medians of three), compared at the end with the same on an empty lake;
4. browse and detail pages of the console, p50 and p95 (Django's test client, in process);
5. a bulk reprocess of the bad producer's messages (10 % of N) once "fixed": approve -> every one
   TBDL and the views current.
Each step's wall time, its CPU µs a message (bench.support.CpuMeter: this process, its JVM and
Spark's Python workers, and the database server on PostgreSQL) and the peak resident memory of
this process tree (the Spark driver, its JVM and its Python workers: what the spark worker holds)
are printed; the lake's size on disk too.
"""

import os
import statistics
import subprocess
import time

from bench.support import (
    CPU_PER_MESSAGE,
    CpuMeter,
    PeakMemory,
    cpu_per_message,
    django_setup,
    fresh_state,
    messages_from_env,
    order_line,
    percentile,
)

GOOD, BAD = "bench.scale", "bench.scale.bad"
POISON_EVERY = 1_000
FILE_ROWS = 1_000_000  # messages per JSON Lines file: ingest reads one file at a time
REQUESTS = 30


def _write(path, first, n, *, queue, prefix, broken):
    """n orders in the ingest format; `broken(i)`: that order lacks its customer field."""
    with open(path, "w") as f:
        for i in range(first, first + n):
            order = {"order_id": f"{prefix}{i:09d}", "items": [{"sku": f"SKU-{i % 500:05d}"}]}
            if not broken(i):
                order["customer"] = f"c{i % 100_000:06d}"
            order_line(
                f, f"{prefix}{i:09d}", queue, order, conversation_id=f"conv-{prefix}{i // 4:09d}"
            )
    return path


def _ingest(folder, n, *, queue, prefix, broken):
    from console.ingest.services import ingest_file

    accepted = 0
    for first in range(0, n, FILE_ROWS):
        path = _write(
            folder / f"{prefix}-{first}.jsonl",
            first,
            min(FILE_ROWS, n - first),
            queue=queue,
            prefix=prefix,
            broken=broken,
        )
        accepted += ingest_file(path=path, source="bench").accepted
        path.unlink()
    return accepted


def _pages(urls):
    """p50 and p95 in milliseconds of GETting the urls in turn as bench console does, after its
    warm-up, and the CPU column of those requests."""
    from django.test import Client

    from bench.bench_console import _time
    from bench.console_seed import operator_user

    client = Client()
    client.force_login(operator_user())
    samples, meter = _time(client, urls, REQUESTS)
    p50, p95 = round(percentile(samples, 50), 1), round(percentile(samples, 95), 1)
    return p50, p95, meter.per_request(len(samples))


def _people():
    from bench.bench_decisions import _people as people

    return people()


def _du_mib(path):
    done = subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True, check=False)
    return int(done.stdout.split()[0]) if done.returncode == 0 else None


def run():
    django_setup()
    from django.conf import settings
    from django.db import connection

    from console.decisions.execution import action_request_execute
    from console.decisions.services import Action, action_request_approve, action_request_create
    from console.delivery.execution import delivery_run
    from console.lake.execution import lake_history_compact_if_due, lake_state_compact_if_due
    from console.queues.models import Queue
    from console.readmodels.execution import read_models_refresh
    from console.readmodels.models import (
        MessageIndex,
    )
    from console.spark import spark_from_settings

    n = messages_from_env(10_000_000)
    bad = n // 10
    good = n - bad
    cores = os.cpu_count()
    backend = connection.vendor
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    lake_root = fresh_state("scale")
    inputs = lake_root.parent / "scale-input"
    inputs.mkdir(exist_ok=True)
    for name in (GOOD, BAD):
        Queue.objects.create(name=name, handler="workers.demo.handlers.orders")
    rows = []

    def row(step, seconds, memory=None, **more):
        rows.append(
            {
                "step": step,
                "backend": backend,
                "messages": n,
                "seconds": round(seconds, 1),
                **({"peak_mib": memory.peak_mib} if memory else {}),
                **more,
                "cores": cores,
            }
        )

    with CpuMeter() as meter, PeakMemory() as memory:
        accepted = _ingest(
            inputs, good, queue=GOOD, prefix="g", broken=lambda i: i % POISON_EVERY == 7
        )
        accepted += _ingest(inputs, bad, queue=BAD, prefix="b", broken=lambda i: True)
    seconds = meter.seconds
    assert accepted == n, accepted
    row(
        "ingest (JSON Lines)",
        seconds,
        memory,
        **meter.per_message(n),
        per_second=round(n / seconds),
    )

    spark = spark_from_settings()
    with CpuMeter() as meter, PeakMemory() as memory:
        run = delivery_run(spark=spark)
    seconds = meter.seconds
    poison = len(range(7, good, POISON_EVERY))
    assert run.outcomes["states"] == {"DLVD": good - poison, "NDLV": poison + bad}, run.outcomes
    row(
        "delivery run (all)", seconds, memory, **meter.per_message(n), per_second=round(n / seconds)
    )

    # What the spark worker's delivery task does after every run: the state and open snapshots
    # and the history generation the next runs, refreshes and detail pages read.
    with CpuMeter() as meter, PeakMemory() as memory:
        lake_state_compact_if_due(force=True, spark=spark)
        lake_history_compact_if_due(force=True, spark=spark)
    row("compactions after the run", meter.seconds, memory, **meter.per_message(n))

    with CpuMeter() as meter, PeakMemory() as memory:
        read_models_refresh(full=True, spark=spark)
    row("refresh, full", meter.seconds, memory, **meter.per_message(n))
    assert MessageIndex.objects.filter(state="NDLV").count() == poison + bad

    # A trickle after all that: what each later run and refresh costs with N in the lake (the
    # same on an empty lake at the end, for the ratio).
    trickle, trickle_cpu = _trickle(inputs, spark, prefix="t")
    for step, seconds in trickle.items():
        row(step, seconds, **trickle_cpu[step])

    sample = MessageIndex.objects.filter(queue=GOOD).order_by("message_id").first()
    pages = {
        "browse: first page": ["/messages/"],
        "browse: one queue, NDLV": [f"/messages/?queue={GOOD}&state=NDLV"],
        "browse: reason text": ["/messages/?q=customer"],
        "detail": [f"/messages/{sample.message_id}/"],
        "dashboard": ["/"],
    }
    for name, urls in pages.items():
        p50, p95, cpu = _pages(urls)
        rows.append({"step": name, "backend": backend, "messages": n, "p50_ms": p50,
                     "p95_ms": p95, **cpu, "cores": cores})  # fmt: skip

    people = _people()
    started = time.perf_counter()
    request = action_request_create(
        actor=people["operator"],
        scope={"kind": "filter", "filters": {"queue": BAD, "state": "NDLV"}},
        action=Action(kind="reprocess"),
        comment="bench: the producer is fixed",
    )
    frozen = time.perf_counter() - started
    assert request.count == bad, request.count
    with CpuMeter() as meter, PeakMemory() as memory:
        action_request_approve(actor=people["approver"], request=request)
        request = action_request_execute(request_id=request.id, spark=spark)
    seconds = meter.seconds
    assert (request.status, request.done) == ("done", bad), (request.status, request.done)
    row(
        f"bulk reprocess of {bad:,}",
        seconds,
        memory,
        **meter.per_message(bad),
        per_second=round(bad / seconds),
        request_seconds=round(frozen, 1),
    )
    rows.append({"step": "lake on disk", "messages": n, "mib": _du_mib(lake_root)})

    fresh_state("scale-empty")
    Queue.objects.create(name=GOOD, handler="workers.demo.handlers.orders")
    empty, empty_cpu = _trickle(inputs, spark, prefix="e")
    for step, seconds in empty.items():
        rows.append(
            {
                "step": f"{step}, against an empty lake",
                "backend": backend,
                "messages": n,
                "seconds": round(trickle[step], 1),
                **trickle_cpu[step],
                "empty_lake_seconds": round(seconds, 1),
                "empty_lake_cpu_us_per_msg": empty_cpu[step][CPU_PER_MESSAGE],
                "ratio": round(trickle[step] / seconds, 2),
                "goal": "<= 1.2",
                "cores": cores,
            }
        )
    return rows


def _trickle(inputs, spark, *, prefix):
    """{step: seconds}, medians of three: a delivery run of 100 new messages (small enough to
    run without Spark), then the refresh of what it changed; and {step: its CPU column} over the
    three."""
    from console.delivery.execution import delivery_run
    from console.readmodels.execution import read_models_refresh

    times = {"delivery run (100 new)": [], "refresh, 100 changes": []}
    cpu = dict.fromkeys(times, 0.0)
    for k in range(3):
        _ingest(inputs, 100, queue=GOOD, prefix=f"{prefix}{k}-", broken=lambda i: i == 0)
        with CpuMeter() as delivery:
            run = delivery_run(spark=spark)
        assert run.claimed == 100, run.claimed
        with CpuMeter() as refresh:
            read_models_refresh(spark=spark)
        for step, meter in zip(times, (delivery, refresh), strict=True):
            times[step].append(meter.seconds)
            cpu[step] += meter.cpu_seconds
    medians = {step: statistics.median(seconds) for step, seconds in times.items()}
    return medians, {step: cpu_per_message(spent, 300) for step, spent in cpu.items()}
