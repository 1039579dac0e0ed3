"""What the benchmarks share: a Django set-up on its own VAR_DIR, fresh lakes, a sampler of peak
memory over a process and its children (the JVM and Spark's Python workers), and the meter of
CPU per message every benchmark reports (CpuMeter: every process involved, from /proc)."""

import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

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
            self._stop.wait(self.interval)

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


# --- CPU per message: every process involved, from /proc ----------------------------------------

# The servers a benchmark's messages may pass through, by process name (CpuMeter's `servers`).
POSTGRES_SERVER = ("postgres",)
REDIS_SERVER = ("redis-server",)
RABBITMQ_SERVER = ("beam.smp",)
NATS_SERVER = ("nats-server",)
# The columns every benchmark reports CPU in, beside its wall time (CpuMeter.per_message and
# per_request): one name each, so that `python -m bench`'s table reads across benchmarks.
CPU_PER_MESSAGE = "cpu_us_per_msg"
CPU_PER_REQUEST = "cpu_ms_per_request"


@dataclass(frozen=True)
class ProcStat:
    """What the kernel says of a process (psutil reads it from /proc/<pid>/stat)."""

    name: str
    ppid: int
    start: float  # its creation time: with the pid, which process this is
    cpu: float  # seconds, user + system: its own and that of the children it has waited for


def proc_stat(pid):
    """A process's ProcStat, or None when it is gone."""
    try:
        process = psutil.Process(pid)
        with process.oneshot():
            times = process.cpu_times()
            return ProcStat(
                name=process.name(),
                ppid=process.ppid(),
                start=process.create_time(),
                cpu=times.user + times.system + times.children_user + times.children_system,
            )
    except psutil.Error:
        return None


def _pids():
    return set(psutil.pids())


def processes():
    """{pid: ProcStat} of every process now."""
    found = {}
    for pid in _pids():
        stat = proc_stat(pid)
        if stat is not None:
            found[pid] = stat
    return found


def descendants(found, roots):
    """The pids of `roots` and of all their descendants, among `found` ({pid: ProcStat})."""
    children = {}
    for pid, stat in found.items():
        children.setdefault(stat.ppid, []).append(pid)
    tree, todo = set(), [pid for pid in roots if pid in found]
    while todo:
        pid = todo.pop()
        if pid not in tree:
            tree.add(pid)
            todo.extend(children.get(pid, ()))
    return tree


def process_tree_cpu(root, *, group=None):
    """CPU seconds so far of `root` and all its descendants, living or waited for: each live
    process counts its own time and that of the children it reaped, so every second counts once.
    With `group` (pid -> a name), {name: seconds}."""
    found = processes()
    totals = {}
    for pid in descendants(found, [root]):
        name = group(pid) if group else None
        totals[name] = totals.get(name, 0.0) + found[pid].cpu
    return totals if group else totals.get(None, 0.0)


def product_servers(*, broker=False):
    """The servers the product's messages pass through here, by process name: PostgreSQL when it
    is Django's database; with `broker`, Celery's broker's too (Redis or RabbitMQ), for a
    benchmark that runs the product's processes. None before Django is set up."""
    from django.conf import settings

    if not settings.configured:
        return ()
    from django.db import connection

    names = POSTGRES_SERVER if connection.vendor == "postgresql" else ()
    scheme = urlsplit(settings.CELERY_BROKER_URL).scheme if broker else ""
    if scheme in ("redis", "rediss"):
        names += REDIS_SERVER
    elif scheme in ("amqp", "pyamqp"):
        names += RABBITMQ_SERVER
    return names


@dataclass
class _Measured:
    """A process CpuMeter counts."""

    parent: tuple | None  # the (pid, start) of its parent when last read; None: not measured
    first: float  # CPU seconds at the start of the measure (0 for one started since)
    last: float  # CPU seconds at its last reading
    server: bool
    gone: int | None = None  # the reading that first found it gone


class CpuMeter(SamplingThread):
    """CPU seconds (user + system) of every process a benchmark involves, over a timed part:

        with CpuMeter() as meter:
            ...  # move n messages
        row = {"seconds": meter.seconds, **meter.per_message(n)}

    Counted, from /proc: the `roots` (this process by default) and all their descendants (Spark's
    JVM and its Python workers, the delivery runs' children, processes a benchmark starts), and
    the processes named one of `servers` with their descendants (every PostgreSQL backend, the
    broker's server; by default product_servers(): PostgreSQL when it is the database).

    The method. A process's reading is its own CPU time and that of the children it has waited
    for (/proc/<pid>/stat: utime + stime + cutime + cstime, psutil's user + system +
    children_user + children_system), so a child that ended and was reaped is counted in its
    parent, once. Each process counts its last reading less its reading at the start (nothing
    for one started since). A sampler thread reads every `interval` seconds, so that processes
    which start and end during the measure are seen: one that ends while its parent lives on was
    reaped by it and counts there; one whose parent ended first (a process group killed together,
    an orphan taken by init) counts its last reading. The sampler's own thread is left out.

    Limits. A clock tick (10 ms) a process. A process whose parent ended first loses what it
    spent after its last reading (up to `interval`), and one that started and ended between two
    readings under a parent that ended too is not counted at all; a parent that reaps a child
    and ends within the same `interval` counts that child twice. The servers are shared:
    whatever else runs on them meanwhile (another database's backends, a test suite's) is counted
    too, so on a busy machine the servers' part is an upper bound. Linux only."""

    interval = 0.25

    def __init__(self, *, servers=None, roots=None):
        super().__init__()
        self.servers = product_servers() if servers is None else tuple(servers)
        self.roots = (os.getpid(),) if roots is None else tuple(roots)
        self.seconds = None  # wall, once stopped
        self._measured = {}  # (pid, start) -> _Measured
        self._alive = {}  # pid -> (pid, start), of the measured ones alive at the last reading
        self._listed = set()  # the pids of /proc at the last reading
        self._readings = 0
        self._sampler_cpu = 0.0
        self._measures_itself = False
        self._lock = threading.Lock()

    def _measure(self, pid, stat, *, first, server):
        key = (pid, stat.start)
        self._measured[key] = _Measured(None, first, stat.cpu, server)
        self._alive[pid] = key

    def start(self):
        found = processes()
        tree = descendants(found, self.roots)
        named = [pid for pid, stat in found.items() if stat.name in self.servers]
        servers = descendants(found, named) - tree
        for pid in tree | servers:
            self._measure(pid, found[pid], first=found[pid].cpu, server=pid in servers)
        self._measures_itself = os.getpid() in tree
        for pid, key in self._alive.items():
            self._measured[key].parent = self._alive.get(found[pid].ppid)
        self._listed = set(found)
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def stop(self):
        self.seconds = time.perf_counter() - self._started
        self._stop.set()
        self._thread.join()
        self._read()
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def sample(self):
        spent = time.thread_time()
        self._read()
        self._sampler_cpu += time.thread_time() - spent

    def _read(self):
        listed = _pids()
        with self._lock:
            self._readings += 1
            # Children before parents: a child reaped meanwhile is then in its parent's reading.
            for pid, key in sorted(self._alive.items(), reverse=True):
                stat = proc_stat(pid) if pid in listed else None
                measured = self._measured[key]
                if stat is None or stat.start != key[1]:  # gone (reaped), or its pid reused
                    measured.gone = self._readings
                    del self._alive[pid]
                    continue
                measured.last = stat.cpu
                measured.parent = self._alive.get(stat.ppid)  # None once an orphan
            new = {pid: stat for pid in listed - self._listed if (stat := proc_stat(pid))}
            # Those started since under a measured process (a new one too), or a server's.
            while taken := [
                pid
                for pid, stat in new.items()
                if stat.ppid in self._alive or stat.name in self.servers
            ]:
                for pid in taken:
                    stat = new.pop(pid)
                    parent = self._alive.get(stat.ppid)
                    server = self._measured[parent].server if parent else True
                    self._measure(pid, stat, first=0.0, server=server)
                    self._measured[self._alive[pid]].parent = parent
            self._listed = listed

    def _spent(self, measured):
        """What one process adds: nothing more once it ended while its parent lived on (its
        time is in the parent's reading)."""
        parent = self._measured.get(measured.parent) if measured.gone else None
        reaped = parent is not None and (parent.gone is None or parent.gone > measured.gone)
        return (0.0 if reaped else measured.last) - measured.first

    def _total(self, *, servers_only=False):
        with self._lock:
            total = sum(
                self._spent(m) for m in self._measured.values() if m.server or not servers_only
            )
        if servers_only or not self._measures_itself:
            return total
        return max(0.0, total - self._sampler_cpu)

    def reading(self):
        """CPU seconds from the start until now (a reading taken now), while the meter runs."""
        self._read()
        return self._total()

    def started_at(self):
        """perf_counter() at the start: what a wait inside the measure measures against."""
        return self._started

    @property
    def cpu_seconds(self):
        return self._total()

    @property
    def servers_cpu_seconds(self):
        """The servers' part of cpu_seconds."""
        return self._total(servers_only=True)

    def us_per_message(self, n):
        return self.cpu_seconds / n * 1e6

    def ms_per_request(self, n):
        return self.cpu_seconds / n * 1e3

    def per_message(self, n):
        """The column of CPU µs a message, for a benchmark's row."""
        return cpu_per_message(self.cpu_seconds, n)

    def per_request(self, n):
        """The column of CPU ms a request, for a benchmark of the console's pages."""
        return cpu_per_request(self.cpu_seconds, n)

    def figures(self, n):
        """Seconds, messages a second and CPU µs a message of n messages, and the servers' part."""
        return {
            "seconds": round(self.seconds, 2),
            "msgs_per_s": round(n / self.seconds),
            **self.per_message(n),
            "servers_cpu_us_per_msg": round(self.servers_cpu_seconds / n * 1e6, 1),
        }


def cpu_per_message(cpu_seconds, n):
    """The column of CPU µs a message, from CPU seconds measured (by CpuMeters) over n."""
    return {CPU_PER_MESSAGE: round(cpu_seconds / n * 1e6, 1)}


def cpu_per_request(cpu_seconds, n):
    """The column of CPU ms a request, from CPU seconds measured over n requests."""
    return {CPU_PER_REQUEST: round(cpu_seconds / n * 1e3, 2)}


def settled(servers, *, share=0.05, window=0.5, patience=30.0):
    """Wait until the servers named are quiet (below `share` of a core over `window` seconds),
    `patience` seconds at most: RabbitMQ goes on writing a burst of persistent messages after
    confirming them, and the next phase timed must not be charged for it."""
    deadline = time.monotonic() + patience
    with CpuMeter(servers=servers, roots=()) as meter:
        before = 0.0
        while time.monotonic() < deadline:
            time.sleep(window)
            now = meter.reading()
            if now - before < share * window:
                return
            before = now


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
