"""What the benchmarks share: a Django set-up on its own VAR_DIR, fresh lakes, and a sampler of
peak memory over a process and its children (the JVM and Spark's Python workers)."""

import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent


def django_setup():
    os.environ.setdefault("VAR_DIR", str(ROOT / "var" / "bench"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def bench_start(name, *, messages):
    """Django set up for a benchmark that refreshes the read models itself (none after each
    commit), on a fresh state named `name` (fresh_state). Returns N: BENCH_MESSAGES, `messages`
    by default."""
    django_setup()
    from django.conf import settings

    settings.REFRESH_ON_COMMIT = False
    fresh_state(name)
    return messages_from_env(messages)


def console_bench_setup():
    """Django set up for a benchmark of the console's pages, its test client let in. Returns
    (messages: BENCH_MESSAGES, 1M by default; requests timed a page: BENCH_REQUESTS, 40 by
    default; the database's vendor; the cores)."""
    django_setup()
    from django.conf import settings
    from django.db import connection

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    requests = int(os.environ.get("BENCH_REQUESTS", 40))
    return messages_from_env(1_000_000), requests, connection.vendor, os.cpu_count()


def fresh_state(name):
    """An empty lake folder and empty product tables (the read models too) for one benchmark."""
    from django.conf import settings

    from console.delivery.models import DeliveryRun, PoisonChange, PoisonEntry
    from console.ingest.models import InboxFile, MessageKey
    from console.lake.models import Epoch, LakeCommit
    from console.queues.models import BrokerSource, Queue
    from console.readmodels.models import (
        FailureGroup,
        MessageIndex,
        QuarantineInflow,
        QueueStat,
        RefreshRun,
    )

    product = (
        MessageKey,
        InboxFile,
        PoisonEntry,
        PoisonChange,
        DeliveryRun,
        LakeCommit,
        Epoch,
        BrokerSource,  # before the queues they feed (a protected reference)
        Queue,
    )
    for model in product:
        model.objects.all().delete()
    for model in (MessageIndex, FailureGroup, QueueStat, QuarantineInflow, RefreshRun):
        model.objects.all().delete()
    lake = Path(settings.VAR_DIR) / "bench-lakes" / name
    shutil.rmtree(lake, ignore_errors=True)
    lake.mkdir(parents=True)
    settings.LAKE_URI = str(lake)
    return lake


def lake_table(dataset, table):
    """A seed's pyarrow table in the lake's layout of `dataset` (workers.lake.schema): the columns
    it does not build (added to the schema since, as redrive_target) as nulls, then cast."""
    import pyarrow as pa

    from workers.lake.schema import SCHEMAS

    schema = SCHEMAS[dataset]
    for field in schema:
        if field.name not in table.column_names:
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    return table.select(schema.names).cast(schema)


def orders_file(path, n, *, queue, seed=7, prefix="o"):
    """n realistic JSON orders, one per line, in the product's ingest format."""
    rng = random.Random(seed)
    skus = [f"SKU-{i:05d}" for i in range(500)]
    with open(path, "w") as f:
        for i in range(n):
            order = {
                "order_id": f"{prefix}{i:09d}",
                "customer": f"c{rng.randrange(100_000):06d}",
                "items": [{"sku": rng.choice(skus), "qty": rng.randrange(1, 5)}],
            }
            order_line(f, f"{prefix}{i:09d}", queue, order, conversation_id=f"conv-{i // 4:08d}")
    return path


def order_line(f, message_id, queue, order, *, conversation_id):
    """One order as a line of the ingest's JSON Lines format."""
    record = {
        "id": message_id,
        "queue": queue,
        "body": json.dumps(order, separators=(",", ":")),
        "content_type": "application/json",
        "conversation_id": conversation_id,
        "sender": "shop@example.test",
    }
    f.write(json.dumps(record, separators=(",", ":")))
    f.write("\n")


class SamplingThread:
    """A context manager that calls `sample()` every `interval` seconds on a daemon thread, from
    entering until leaving: what a measure taken while something else runs is built on."""

    interval = 0.05

    def __init__(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self):
        raise NotImplementedError

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            time.sleep(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


class PeakMemory(SamplingThread):
    """Samples the resident memory of this process and all its descendants every 50 ms."""

    def __init__(self, pid=None):
        super().__init__()
        self.process = psutil.Process(pid or os.getpid())
        self.peak = 0

    def sample(self):
        total = 0
        for proc in [self.process, *self.process.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                total += proc.memory_info().rss
        self.peak = max(self.peak, total)

    @property
    def peak_mib(self):
        return round(self.peak / 2**20)


def percentile(samples, p):
    """The p-th percentile of `samples`, nearest rank (the benchmarks' p50 and p95)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def messages_from_env(default):
    return int(os.environ.get("BENCH_MESSAGES", default))


# --- The same benchmark on PostgreSQL -----------------------------------------------------------

POSTGRES = "postgres://postgres@127.0.0.1:5432/antidote_bench"
ROWS_MARKER = "BENCH-ROWS "


def port_answers(port, *, host="127.0.0.1", timeout=2):
    """Whether a server accepts connections on host:port (a service a benchmark needs)."""
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def postgres_answers():
    return port_answers(5432)


def login_page_answers(url, *, timeout=5):
    """Whether the console at `url` serves its login page: its web is up and answering."""
    import requests

    try:
        return requests.get(f"{url}/login/", timeout=timeout).status_code == 200
    except requests.RequestException:
        return False


def _database_create(url):
    """The benchmark's database, created on the server if it is not there yet."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def rows_print(rows):
    """What a benchmark module run as a child (`python -m bench.bench_x`) hands its parent."""
    print(ROWS_MARKER + json.dumps(rows, default=str), flush=True)


def on_both_databases(run_here, module):
    """`run_here()` on this process's database and then, when DATABASE_URL is not set and
    PostgreSQL answers on 127.0.0.1:5432, again on PostgreSQL (BENCH_POSTGRES_URL, by default the
    database antidote_bench, created if missing) in a child process running `module` (which
    calls `rows_print(run_here())` as its main): Django's database is chosen at start."""
    rows = run_here()
    if "DATABASE_URL" in os.environ or not postgres_answers():
        return rows
    # This process's Spark session goes first, so that two JVMs do not share the memory.
    from workers.spark import spark_stop

    spark_stop()
    url = os.environ.get("BENCH_POSTGRES_URL", POSTGRES)
    _database_create(url)
    return rows + child_rows(
        module, env=dict(os.environ, DATABASE_URL=url), what="the PostgreSQL run"
    )


def child_rows(module, *argv, env, what):
    """The rows `python -m module *argv` hands its parent (rows_print), run with `env` (VAR_DIR
    the benchmarks' own unless set); RuntimeError with the end of its output if it hands none:
    `what` failed."""
    env = {"VAR_DIR": str(ROOT / "var" / "bench"), **env}
    done = subprocess.run(
        [sys.executable, "-m", module, *argv],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    for line in done.stdout.splitlines():
        if line.startswith(ROWS_MARKER):
            return json.loads(line[len(ROWS_MARKER) :])
    raise RuntimeError(f"{what} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


# --- The running product: Celery's spark and default workers and beat, as `make run` starts them


def product_processes(env, folder, *, spark_threads=4):
    """Start the spark worker, the default worker and beat with `env`, logging into `folder`;
    returns what `processes_stop` takes."""
    celery = [sys.executable, "-m", "celery", "-A", "workers"]
    quiet = ["--without-heartbeat", "--without-mingle", "--without-gossip", "-l", "WARNING"]
    commands = {
        "spark": [*celery, "worker", "-Q", "spark", "-P", "threads", "-c", str(spark_threads)],
        "default": [*celery, "worker", "-Q", "default", "-P", "threads", "-c", "2"],
        "beat": [*celery, "beat", "-s", str(folder / "beat-schedule")],
    }
    started = []
    for name, command in commands.items():
        command += quiet if name != "beat" else ["-l", "WARNING"]
        log = open(folder / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        started.append((process, log))
    return started


def processes_stop(started):
    for proc, _ in started:
        proc.terminate()
    for proc, log in started:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def delivered_at(message_id):
    """The time of a message's DLVD event, or None while it is not DLVD."""
    from console.browse.selectors import message_detail

    detail = message_detail(message_id=message_id)
    if detail is None or detail["state"] != "DLVD":
        return None
    return detail["history"][-1]["at"]
