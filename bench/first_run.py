"""A newcomer's first `make run` (issue 31), on a VAR_DIR of its own and a free port: `make run` as
it is, its output read line by line with when each line came, the web asked for its login page,
the dashboard's numbers (/api/v1/stats) asked for as a demo user, the CPU seconds of every process
read from /proc, and Ctrl-C (SIGINT to make's process group, as a terminal sends it) at the end.

bench/bench_first_run.py times it; tests/browser/test_first_run.py watches it in Chromium. The
demo's RabbitMQ-fed queue gets a RabbitMQ virtual host of its own when rabbitmqctl can make one
(the shared vhost's demo queues are left alone); otherwise it is off, as without RabbitMQ. The
NATS- and Redis-fed queues get servers of their own (own_brokers), neither server having a
virtual host to give; without them they are off."""

import contextlib
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import requests

from bench.support import (
    descendants,
    login_page_answers,
    port_answers,
    process_tree_cpu,
    processes,
)

ROOT = Path(__file__).resolve().parent.parent
# What `make run` reads that a newcomer has not set: the run's data stays in its own VAR_DIR.
PRODUCT_SETTINGS = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "LAKE_URI",
    "INBOX_DIR",
    "STATIC_ROOT",
    "ANTIDOTE_AMQP_URL",
    "ANTIDOTE_NATS_URL",
    "ANTIDOTE_REDIS_STREAMS_URL",
    "DJANGO_SETTINGS_MODULE",
    "PORT",
    "DJANGO_ALLOW_ASYNC_UNSAFE",
)
# Bounds on waits, so that a run that goes wrong ends with its output instead of hanging; never
# measures of speed.
STOP_PATIENCE = 60
REQUEST_TIMEOUT = 30
ROLES = ("viewer", "operator", "approver", "admin", "auditor", "application")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rabbitmq_vhost():
    """A RabbitMQ virtual host of its own, (url, name), or None when none can be made here."""
    if shutil.which("rabbitmqctl") is None:
        return None
    if not port_answers(5672):
        return None
    name = f"antidote-first-run-{uuid.uuid4().hex[:8]}"
    ctl = ["rabbitmqctl", "-q"]
    made = subprocess.run([*ctl, "add_vhost", name], capture_output=True, check=False)
    if made.returncode != 0:
        return None
    subprocess.run(
        [*ctl, "set_permissions", "-p", name, "guest", ".*", ".*", ".*"],
        capture_output=True,
        check=True,
    )
    return f"amqp://guest:guest@127.0.0.1:5672/{name}", name


@contextlib.contextmanager
def own_brokers(folder):
    """A `nats-server -js` and a `redis-server` of the run's own, on free ports, their data in
    `folder`: {"nats": url or None, "redis": url or None}, None where the server is not installed.
    Stopped on leaving. The shared servers' demo streams belong to a developer's own `make run`,
    whose dead letters this run's sources process would otherwise drain."""
    folder = Path(folder)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    commands = {
        "nats": (
            shutil.which("nats-server") or "/usr/sbin/nats-server",
            lambda port: ["-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(folder / "nats")],
            "nats://127.0.0.1:{port}",
        ),
        "redis": (
            shutil.which("redis-server"),
            lambda port: [
                "--bind",
                "127.0.0.1",
                "--port",
                str(port),
                "--save",
                "",
                "--dir",
                str(folder),
            ],
            "redis://127.0.0.1:{port}/3",
        ),
    }
    started, urls = [], {}
    try:
        for name, (binary, arguments, url) in commands.items():
            urls[name] = None
            if not binary or not Path(binary).exists():
                continue
            port = free_port()
            started.append(
                subprocess.Popen(
                    [binary, *arguments(port)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            if _port_answers(port, patience=20):
                urls[name] = url.format(port=port)
        yield urls
    finally:
        for proc in started:
            proc.terminate()
        for proc in started:
            try:
                proc.wait(timeout=STOP_PATIENCE)
            except subprocess.TimeoutExpired:
                proc.kill()


def _port_answers(port, *, patience):
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        if port_answers(port, timeout=1):
            return True
        time.sleep(0.1)
    return False


def rabbitmq_vhost_delete(name):
    subprocess.run(["rabbitmqctl", "-q", "delete_vhost", name], capture_output=True, check=False)


def _honcho_name(pid):
    """The Procfile process a process belongs to: honcho's HONCHO_PROCESS_NAME, which the
    process's children (the JVM, Spark's Python workers) inherit."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    for entry in environ.split(b"\0"):
        if entry.startswith(b"HONCHO_PROCESS_NAME="):
            return entry.split(b"=", 1)[1].decode().split(".")[0]
    return None


class FirstRun:
    """`make run` on `folder` (its VAR_DIR, emptied first) and a free port."""

    def __init__(
        self, folder, *, port=None, amqp_url=None, nats_url=None, redis_url=None, root=ROOT
    ):
        self.folder = Path(folder)
        self.root = Path(root)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # None: that demo off (nothing listens on port 1).
        self.amqp_url = amqp_url or "amqp://guest:guest@127.0.0.1:1/%2F"
        self.nats_url = nats_url or "nats://127.0.0.1:1"
        self.redis_url = redis_url or "redis://127.0.0.1:1/3"
        self.lines = []  # (seconds after the start, line)
        self.proc = None
        self.started = None  # monotonic
        self.started_at = None  # wall clock, to read the database's times against
        self._reader = None

    def env(self):
        env = {k: v for k, v in os.environ.items() if k not in PRODUCT_SETTINGS}
        env.update(
            VAR_DIR=str(self.folder),
            ANTIDOTE_AMQP_URL=self.amqp_url,
            ANTIDOTE_NATS_URL=self.nats_url,
            ANTIDOTE_REDIS_STREAMS_URL=self.redis_url,
        )
        return env

    def start(self):
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)
        self.started_at = datetime.now(UTC)
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            ["make", "--no-print-directory", "run", f"PORT={self.port}"],
            cwd=self.root,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            # A terminal's process group of its own: Ctrl-C goes to make and honcho together.
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, name="make-run-output", daemon=True)
        self._reader.start()
        return self

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.lines.append((time.monotonic() - self.started, line))
        (self.folder / "make-run.log").write_text("\n".join(line for _, line in self.lines))

    def elapsed(self):
        return time.monotonic() - self.started

    def output(self):
        return "\n".join(line for _, line in list(self.lines))

    def line_at(self, pattern):
        """Seconds after the start of the first output line matching `pattern`, or None."""
        for at, line in list(self.lines):
            if re.search(pattern, line):
                return at
        return None

    def password(self, user):
        """The password seed_demo printed for `user` (the table: user, role, password)."""
        for _, line in list(self.lines):
            words = line.split()
            if len(words) >= 3 and words[0] == user and words[1] in ROLES:
                return words[2]
        return None

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def web_answers(self):
        return login_page_answers(self.url, timeout=REQUEST_TIMEOUT)

    def session(self, user):
        """A requests session logged in as `user`, or None while that cannot be done yet."""
        password = self.password(user)
        if password is None:
            return None
        session = requests.Session()
        try:
            session.get(f"{self.url}/login/", timeout=REQUEST_TIMEOUT)
            response = session.post(
                f"{self.url}/login/",
                data={
                    "username": user,
                    "password": password,
                    "csrfmiddlewaretoken": session.cookies.get("csrftoken", ""),
                },
                headers={"Referer": f"{self.url}/login/"},
                timeout=REQUEST_TIMEOUT,
            )
        except requests.RequestException:
            return None
        return session if "/login/" not in response.url else None

    def stats(self, session):
        """/api/v1/stats as `session` sees it, or None when the web does not answer."""
        try:
            response = session.get(f"{self.url}/api/v1/stats", timeout=REQUEST_TIMEOUT)
        except requests.RequestException:
            return None
        return response.json() if response.status_code == 200 else None

    def cpu_seconds_by_process(self):
        """CPU seconds so far of every process `make run` started (gone ones included), per
        Procfile process (make, migrate, seed_demo and honcho as "make")."""
        return process_tree_cpu(self.proc.pid, group=lambda pid: _honcho_name(pid) or "make")

    def first_finished(self, table, where=""):
        """Seconds after the start at which the first row of `table` (a run table of the
        product's SQLite database) finished, or None."""
        path = self.folder / "console.sqlite3"
        if not path.exists():
            return None
        try:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                row = db.execute(
                    f"SELECT min(finished_at) FROM {table} "  # noqa: S608 - our own names
                    f"WHERE status = 'committed' {where}"
                ).fetchone()
        except sqlite3.Error:
            return None
        if not row or row[0] is None:
            return None
        finished = datetime.fromisoformat(row[0]).replace(tzinfo=UTC)
        return (finished - self.started_at).total_seconds()

    def interrupt(self, *, patience=STOP_PATIENCE):
        """Ctrl-C: SIGINT to make's process group, as a terminal sends it. Returns the seconds
        until make ended (None if it had not after `patience`, and then it is killed)."""
        if not self.running():
            return 0.0
        pressed = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(timeout=patience)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
        self._reader.join(timeout=10)
        return time.monotonic() - pressed

    def kill(self):
        """SIGKILL what is left: make's group, and each process honcho started in a session of
        its own (the workers, their JVM and Spark's Python workers)."""
        for pid in descendants(processes(), [self.proc.pid]) - {self.proc.pid}:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def tracebacks(self):
        """The output's lines that start or end a Python traceback."""
        return [
            line
            for _, line in self.lines
            if "Traceback (most recent call last)" in line or re.search(r"\bEOFError\b", line)
        ]
