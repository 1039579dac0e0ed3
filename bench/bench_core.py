"""Core benchmarks (issue: the delivery engine and ingest).

1. Ingest of N messages (default 1M) from a JSON Lines file through the real ingest service.
2. Delivery throughput with a no-op handler over those N messages, against a bare Spark
   mapPartitions loop calling the same handler with no poison protection over the same data,
   measured in the same run and the same Spark session.
   Each with its CPU µs a message (bench.support.CpuMeter: this process, its JVM and Spark's
   Python workers, and the database server on PostgreSQL).
3. Peak memory of the process tree holding the Spark session (driver, JVM, Python workers) for a
   delivery run over 100k and over N messages.

BENCH_MESSAGES overrides N for a quick look (e.g. BENCH_MESSAGES=100000).
"""

import json
import os

from bench.support import (
    CpuMeter,
    PeakMemory,
    django_setup,
    fresh_state,
    messages_from_env,
    orders_file,
)

SMALL = 100_000


def _bare_loop(spark, paths, queue):
    """The floor: read the same messages, build the handler's Message, call the handler."""
    from pyspark.sql import functions as F

    from workers.demo.handlers import noop
    from workers.engine.handlers import Message

    df = spark.read.parquet(*paths).where(F.col("queue") == queue)

    def run(rows):
        n = 0
        for r in rows:
            noop(
                Message(
                    id=r.message_id,
                    queue=r.queue,
                    body=r.body,
                    content_type=r.content_type,
                    headers=json.loads(r.headers),
                    conversation_id=r.conversation_id,
                    sender=r.sender,
                    enqueued_at=r.enqueued_at,
                )
            )
            n += 1
        yield n

    return sum(df.rdd.mapPartitions(run).collect())


def run():
    django_setup()
    from django.conf import settings

    from console.delivery.execution import delivery_run
    from console.ingest.services import ingest_file
    from console.lake.selectors import lake_paths
    from console.lake.services import lake
    from console.queues.models import Queue
    from console.spark import spark_from_settings

    n = messages_from_env(1_000_000)
    cores = os.cpu_count()
    lake_root = fresh_state("core")
    big, small = "bench.big", "bench.small"
    for name in (big, small):
        Queue.objects.create(name=name, handler="workers.demo.handlers.noop")
    rows = []

    small_file = orders_file(lake_root / "small.jsonl", SMALL, queue=small, prefix="s")
    big_file = orders_file(lake_root / "big.jsonl", n, queue=big, prefix="b")
    ingest_file(path=small_file, source="bench")
    with CpuMeter() as ingest:
        result = ingest_file(path=big_file, source="bench")
    seconds = ingest.seconds
    assert result.accepted == n, result
    rows.append(
        {
            "benchmark": "ingest from a JSON Lines file",
            "messages": n,
            "seconds": round(seconds, 2),
            **ingest.per_message(n),
            "per_second": round(n / seconds),
            "goal": ">= 50,000/s on 2 cores",
            "cores": cores,
        }
    )

    spark = spark_from_settings()
    paths = lake().paths(lake_paths(dataset="messages"))
    _bare_loop(spark, paths, small)  # warm the JVM and the Python workers for both contenders

    with CpuMeter() as floor:
        assert _bare_loop(spark, paths, big) == n
    bare = floor.seconds

    with PeakMemory() as memory_small:
        run_small = delivery_run(queues=[small], spark=spark)
    assert run_small.outcomes["states"] == {"DLVD": SMALL}, run_small.outcomes

    with CpuMeter() as delivery, PeakMemory() as memory_big:
        run_big = delivery_run(queues=[big], spark=spark)
    engine = delivery.seconds
    assert run_big.outcomes["states"] == {"DLVD": n}, run_big.outcomes

    overhead = engine / bare - 1
    rows.append(
        {
            "benchmark": "bare mapPartitions loop (floor)",
            "messages": n,
            "seconds": round(bare, 2),
            **floor.per_message(n),
            "per_second": round(n / bare),
            "cores": cores,
        }
    )
    rows.append(
        {
            "benchmark": "delivery run, no-op handler",
            "messages": n,
            "seconds": round(engine, 2),
            **delivery.per_message(n),
            "per_second": round(n / engine),
            "overhead_vs_floor": f"{overhead:+.0%}",
            "cpu_overhead_vs_floor": f"{delivery.cpu_seconds / floor.cpu_seconds - 1:+.0%}",
            "goal": "overhead <= 25%",
            "cores": cores,
        }
    )
    rows.append(
        {
            "benchmark": "peak memory, delivery run",
            "messages": SMALL,
            "peak_mib": memory_small.peak_mib,
            "cores": cores,
            "note": f"driver memory {settings.SPARK_DRIVER_MEMORY}",
        }
    )
    rows.append(
        {
            "benchmark": "peak memory, delivery run",
            "messages": n,
            "peak_mib": memory_big.peak_mib,
            "ratio_to_100k": round(memory_big.peak / memory_small.peak, 2),
            "goal": "flat",
            "cores": cores,
        }
    )
    return rows
