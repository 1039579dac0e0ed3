"""Real processes against the test database: Celery workers and Django commands started as
subprocesses, each in its own process group so a test can SIGKILL one with everything it
started (the JVM, Spark's Python workers, handler children)."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def database_url():
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    host = s.get("HOST") or "127.0.0.1"
    port = s.get("PORT") or 5432
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{host}:{port}/{s['NAME']}"


class Processes:
    def __init__(self, env):
        self.env = env
        self.started = []

    def start(self, *args, log, env=None):
        """Start this interpreter with args (a module or manage.py and its arguments)."""
        return self.start_command([sys.executable, *args], log=log, env=env)

    def start_command(self, command, *, log, env=None):
        out = open(log, "ab")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [str(c) for c in command],
            cwd=ROOT,
            env={**self.env, **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        proc.log_path = log
        self.started.append((proc, out))
        return proc

    def kill(self, proc):
        """SIGKILL the process and everything in its group, as a machine failure would."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def stop_all(self):
        for proc, out in self.started:
            if proc.poll() is None:
                self.kill(proc)
            out.close()


@pytest.fixture
def processes(transactional_db, lake_root, settings, tmp_path):
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url(),
        LAKE_URI=str(lake_root),
        HEARTBEAT_SECONDS="1",
        DJANGO_SETTINGS_MODULE="console.settings",
        PYTHONPATH=str(ROOT),
    )
    _broker_forget_unacked()
    procs = Processes(env)
    yield procs
    procs.stop_all()


def _broker_forget_unacked():
    """Tests here kill workers that hold tasks. On Redis, kombu keeps such a task in its unacked
    set and puts it back in its queue once the visibility timeout (an hour) has passed: into a
    later test run's queue, where a worker of another test would take it. Forget them; the
    queues themselves are purged by each test when it has set up what it needs."""
    from django.conf import settings

    if not settings.CELERY_BROKER_URL.startswith("redis"):
        return
    import redis

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete("unacked", "unacked_index", "unacked_mutex")


def celery_worker(queue, *options):
    """The arguments (after the interpreter) of a Celery worker on `queue` with `options`;
    without heartbeat, mingle and gossip, which only slow a test's worker to start and stop."""
    return [
        *["-m", "celery", "-A", "workers", "worker", "-Q", queue, *options],
        *["--without-heartbeat", "--without-mingle", "--without-gossip"],
    ]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def wait_for(predicate, *, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
