"""Exports benchmark (issue 15): the message list as a file (console.browse.exports), CSV and JSON
Lines, over 100k and 1M index rows: rows a second, and the peak memory the streaming takes, which
must not grow with the file (the goal: 1M peaks at what 100k does).

Each size is seeded with bench/console_seed.py (bodies in the lake, the read models in the
console database, in bulk). Each export then runs in a fresh child process
(`python -m bench.bench_exports --measure ...`), as a signed-in operator fetching the page's
export link with Django's test client and reading the streamed file to the end without keeping
it. Its memory is the process's resident high-water mark during the export (Linux: VmHWM, reset
through /proc/self/clear_refs; elsewhere getrusage's maxrss, which counts from the process's
start), and that less its resident size when the export starts, after the first WARM_ROWS rows
of the same export, read and dropped, have loaded every module and grown the heap to what a few
pages take (the same whatever the size, so that the sizes compare). Its CPU µs a row (a message)
is that of the child and, on PostgreSQL, the database server (bench.support.CpuMeter).

Without bodies: every row. With bodies (each read from the lake in batches, base64): the rows of
one queue (about 5 % of them), and at the smallest size every row too. The file's order is not
the lake's, so each page of bodies reads most of the lake's row groups: bodies cost far more a
row than metadata, hence the smaller sets.

Runs on the DATABASE_URL database and, when that is not set and PostgreSQL answers, again on
PostgreSQL (bench.support.on_both_databases). BENCH_EXPORT_SIZES overrides the sizes
("100000,1000000"); BENCH_EXPORT_ALL_BODIES=0 leaves out the export of every row with bodies.
"""

import json
import os
import resource
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

from bench.support import (
    CpuMeter,
    child_rows,
    django_setup,
    fresh_state,
    on_both_databases,
    rows_print,
)

SIZES = (100_000, 1_000_000)
BODIES_QUEUE = "bench.q05"
OPERATOR = "bench-exporter"
MEASURE = "--measure"
WARM_ROWS = 6000  # three of the export's pages


def _sizes():
    text = os.environ.get("BENCH_EXPORT_SIZES")
    return tuple(int(n) for n in text.split(",")) if text else SIZES


def _operator():
    from django.contrib.auth.models import Group, User

    from console.accounts.roles import OPERATOR as ROLE
    from console.accounts.roles import roles_seed

    roles_seed()
    user, _ = User.objects.get_or_create(username=OPERATOR)
    user.groups.set([Group.objects.get(name=ROLE)])
    return user


def run_here():
    django_setup()
    from django.db import connection

    from bench import console_seed
    from console.browse.selectors import message_queryset
    from console.lake.services import epoch_allocate, lake
    from console.queues.models import Queue

    backend = connection.vendor
    all_bodies = os.environ.get("BENCH_EXPORT_ALL_BODIES", "1") != "0"
    sizes = _sizes()
    rows = []
    for n in sizes:
        lake_root = fresh_state("exports")
        console_seed.clear()
        for q in range(console_seed.QUEUES):
            Queue.objects.create(name=f"bench.q{q:02d}", handler="workers.demo.handlers.noop")
        started = time.perf_counter()
        console_seed.seed(n, lake_store=lake(), epoch=epoch_allocate(purpose="bench"))
        console_seed.analyze()
        rows.append(
            {
                "benchmark": "seed (lake + read models)",
                "backend": backend,
                "index_rows": n,
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
        _operator()
        runs = [("csv", False, {}), ("jsonl", False, {})]
        runs += [(f, True, {"queue": BODIES_QUEUE}) for f in ("csv", "jsonl")]
        if all_bodies and n == min(sizes):
            runs += [(f, True, {}) for f in ("csv", "jsonl")]
        for file_format, bodies, filters in runs:
            expected = message_queryset(filters=filters).count()
            measured = _measure_in_child(
                file_format=file_format, bodies=bodies, filters=filters, lake_root=lake_root
            )
            assert measured["rows"] == expected, (measured, expected)
            seconds = measured["seconds"]
            rows.append(
                {
                    "benchmark": f"export {file_format}"
                    + (" with bodies" if bodies else "")
                    + (
                        f" ({', '.join(f'{k}={v}' for k, v in filters.items())})" if filters else ""
                    ),
                    "backend": backend,
                    "index_rows": n,
                    "rows": measured["rows"],
                    "MiB": round(measured["bytes"] / 2**20, 1),
                    "seconds": round(seconds, 2),
                    **measured["cpu"],
                    "rows_per_s": round(measured["rows"] / seconds) if seconds else 0,
                    "peak_rss_MiB": measured["peak_mib"],
                    "over_start_MiB": measured["over_baseline_mib"],
                    "peak_by": measured["peak_by"],
                }
            )
    return rows


def _measure_in_child(*, file_format, bodies, filters, lake_root):
    argv = [MEASURE, json.dumps({"format": file_format, "bodies": bodies, "filters": filters})]
    env = dict(os.environ, LAKE_URI=str(lake_root))
    return child_rows("bench.bench_exports", *argv, env=env, what="the export")[0]


# --- In the child: one export ------------------------------------------------------------------


def _status_kib(name):
    """A VmRSS / VmHWM line of /proc/self/status, in KiB; None where there is none."""
    status = Path("/proc/self/status")
    if not status.exists():
        return None
    for line in status.read_text().splitlines():
        if line.startswith(f"{name}:"):
            return int(line.split()[1])
    return None


def _peak_reset():
    """Start the resident high-water mark afresh (Linux); False where it cannot be."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _drain(response):
    assert response.status_code == 200, (response.status_code, response.content[:300])
    size, lines = 0, 0
    for chunk in response.streaming_content:
        size += len(chunk)
        lines += chunk.count(b"\n")
    return size, lines


def measure(spec):
    """One export as the operator: what it took, as a benchmark row's fields."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    client = Client()
    client.force_login(User.objects.get(username=OPERATOR))
    params = {"format": spec["format"], **spec["filters"]}
    if spec["bodies"]:
        params["bodies"] = "1"
    url = "/messages/export?" + urlencode(params)
    # The same export's first WARM_ROWS rows load the code, the connection and pyarrow, and
    # grow the heap to what a few pages take: the same for every size, so the sizes compare.
    warm = client.get(url)
    lines = 0
    for chunk in warm.streaming_content:
        lines += chunk.count(b"\n")
        if lines >= WARM_ROWS:
            break
    warm.close()

    hwm = _peak_reset()
    baseline = _status_kib("VmRSS") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with CpuMeter() as meter:
        size, lines = _drain(client.get(url))
    if hwm:
        peak, peak_by = _status_kib("VmHWM"), "VmHWM"
    else:
        peak, peak_by = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "maxrss"
    rows = lines - 1 if spec["format"] == "csv" else lines  # the CSV has a header
    return {
        "rows": rows,
        "bytes": size,
        "seconds": meter.seconds,
        "cpu": meter.per_message(max(1, rows)),
        "peak_mib": round(peak / 1024, 1),
        "over_baseline_mib": round((peak - baseline) / 1024, 1),
        "peak_by": peak_by,
    }


def run():
    return on_both_databases(run_here, "bench.bench_exports")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == MEASURE:
        rows_print([measure(json.loads(sys.argv[2]))])
    else:
        rows_print(run_here())
