"""Bounded database connections (issue 29): a threaded process holds at most DB_POOL_MAX
connections to PostgreSQL however many threads want one, and the web answers a request that
finds none free within DB_POOL_TIMEOUT with a 503, never a 500.

Real processes against the test database, counted from PostgreSQL's side (pg_stat_activity, by
the application_name each process gives its connections). SQLite has no pool: skipped there."""

import contextlib
import http.client
import json
import os
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from django.contrib.auth.models import Group, User
from django.contrib.sessions.models import Session
from django.db import connection

from bench.support import SamplingThread
from console.accounts.roles import roles_seed
from tests.browse.conftest import Index
from tests.conftest import require_service, session_headers, settled
from tests.processes.conftest import (
    Processes,
    database_url,
    free_port,
    port_open,
    wait_for,
)

pytestmark = [pytest.mark.services, pytest.mark.slow]

REQUESTS = 200
MESSAGES = 20


@pytest.fixture
def postgres(transactional_db):
    settings = connection.settings_dict
    if settings["ENGINE"].endswith("sqlite3"):
        pytest.skip("SQLite has no connection pool: the suite runs this on PostgreSQL")
    require_service("PostgreSQL", settings["HOST"] or "127.0.0.1", settings["PORT"] or 5432)
    return settings


@pytest.fixture
def signed_in(postgres, lake_root):
    """A viewer's session (a person calls the API signed in: R19), as the headers of a call,
    and messages to read: in the index, with bodies in the lake."""
    roles_seed()
    viewer = User.objects.create_user("viewer")
    viewer.groups.add(Group.objects.get(name="viewer"))
    viewer = settled(viewer)
    index = Index()
    for i in range(MESSAGES):
        index.message(f"m-{i:03d}", json.dumps({"order": i}))
    return session_headers(viewer)


@pytest.fixture
def processes(postgres, lake_root):
    procs = Processes(
        {
            **os.environ,
            "DATABASE_URL": database_url(),
            "LAKE_URI": str(lake_root),
            "DJANGO_SETTINGS_MODULE": "console.settings",
            # 200 calls of one caller at once are the point here, not its rate.
            "API_THROTTLE_RATE": "100000/min",
        }
    )
    yield procs
    procs.stop_all()


def _connect(settings, **options):
    """A connection of the test's own, beside Django's, to the test database."""
    return psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        password=settings["PASSWORD"] or None,
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
        **options,
    )


class Sampler(SamplingThread):
    """Counts, every few milliseconds until stopped, the connections PostgreSQL holds for one
    application_name: its peak is what the process really held, whatever it believes."""

    interval = 0.005

    def __init__(self, settings, application_name):
        super().__init__()
        self.db = _connect(settings, autocommit=True)
        self.name = application_name
        self.peak = 0
        self.samples = 0

    def count(self):
        sql = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
        return self.db.execute(sql, [self.name]).fetchone()[0]

    def waiting_on_a_lock(self):
        sql = (
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
            "AND wait_event_type = 'Lock'"
        )
        return self.db.execute(sql, [self.name]).fetchone()[0]

    def sample(self):
        self.peak = max(self.peak, self.count())
        self.samples += 1

    def __exit__(self, *exc):
        super().__exit__(*exc)
        self.db.close()


def _server(processes, tmp_path, name, **env):
    """`make run`'s web server (runserver: a thread per request) on a free port."""
    port = free_port()
    log = tmp_path / f"{name}.log"
    processes.start(
        "manage.py",
        "runserver",
        f"127.0.0.1:{port}",
        "--noreload",
        log=log,
        env={"DEBUG": "1", "DB_APPLICATION_NAME": name, **env},
    )
    wait_for(lambda: port_open(port), timeout=120, what="the web server to listen")
    return port, log


def _connected(port):
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    client.connect()
    return client


def _ask(client, path, headers=None):
    """(status, Retry-After, body: JSON when it is) of one call on a connected client."""
    try:
        client.request("GET", path, headers=headers or {})
        response = client.getresponse()
        body = response.read().decode(errors="replace")
        if response.getheader("Content-Type", "").startswith("application/json"):
            body = json.loads(body)
        return response.status, response.getheader("Retry-After"), body
    finally:
        client.close()


def _get(port, path, headers=None):
    return _ask(_connected(port), path, headers)


def _all_at_once(port, paths, headers):
    """Every call from a thread of its own, sent together. The connections are opened first,
    one after another: runserver listens with a backlog of 10, and connections attempted all
    at once would mostly wait for their SYN to be retried (1, 3, 7 ... s later), never reaching
    the server together."""
    clients = [_connected(port) for _ in paths]
    start = threading.Barrier(len(paths))

    def call(client, path):
        start.wait()
        return _ask(client, path, headers)

    with ThreadPoolExecutor(max_workers=len(paths)) as pool:
        return list(pool.map(call, clients, paths))


def test_two_hundred_concurrent_api_calls_never_hold_more_than_the_pool(
    processes, signed_in, postgres, tmp_path
):
    name = f"antidote-web-{uuid.uuid4().hex[:12]}"
    port, log = _server(processes, tmp_path, name, DB_POOL_MAX="4")
    paths = [
        "/api/v1/index/messages?page_size=50" if i % 2 else f"/api/v1/messages/m-{i % MESSAGES:03d}"
        for i in range(REQUESTS)
    ]

    with Sampler(postgres, name) as sampler:
        answers = _all_at_once(port, paths, signed_in)
    statuses = Counter(status for status, _, _ in answers)
    print(f"{REQUESTS} calls: {dict(statuses)}; peak {sampler.peak} connections of 4 allowed")

    assert sampler.samples > 10
    assert 1 <= sampler.peak <= 4
    # Every call answered: read (200), or told plainly to come back (503). Never a 500.
    assert set(statuses) <= {200, 503}, answers
    assert statuses[200] > 0
    read = [body for status, _, body in answers if status == 200]
    assert any(body.get("id", "").startswith("m-") for body in read)
    assert any(len(body.get("results", ())) == MESSAGES for body in read)
    assert "Traceback" not in log.read_text()


@contextlib.contextmanager
def _sessions_locked(processes, postgres, tmp_path, *, pool_max):
    """A server of `pool_max` pooled connections, each call waiting 1 s at most for one, while
    this test holds a lock on the session table: a signed-in call is held until the block ends.
    Yields its port, its log, a one-thread pool to call it from, and a sampler of its
    connections."""
    name = f"antidote-web-{uuid.uuid4().hex[:12]}"
    port, log = _server(processes, tmp_path, name, DB_POOL_MAX=str(pool_max), DB_POOL_TIMEOUT="1")
    # Left in this order: the lock first, and the caller last, once its calls could finish.
    with (
        ThreadPoolExecutor(max_workers=1) as caller,
        Sampler(postgres, name) as sampler,
        _table_locked(postgres, Session._meta.db_table),
    ):
        yield port, log, caller, sampler


def test_a_call_that_finds_no_connection_free_in_time_is_answered_503(
    processes, signed_in, postgres, tmp_path
):
    # The server's two connections are taken by calls stuck behind a lock on the session table,
    # which this test holds until every other call has been answered.
    with _sessions_locked(processes, postgres, tmp_path, pool_max=2) as (
        port,
        log,
        caller,
        sampler,
    ):
        pending = caller.submit(_all_at_once, port, ["/api/v1/index/messages"] * 10, signed_in)
        wait_for(
            lambda: sampler.waiting_on_a_lock() == 2,
            timeout=60,
            what="two calls to hold the server's connections",
        )
        time.sleep(3)  # the other eight have waited 1 s for a connection, and been refused
        assert not pending.done()
        assert sampler.waiting_on_a_lock() == 2
        # Leaving the lock lets the two held calls finish.
    answers = pending.result()
    statuses = Counter(status for status, _, _ in answers)

    assert statuses == {200: 2, 503: 8}
    busy = [(retry, body) for status, retry, body in answers if status == 503]
    assert all(retry == "5" for retry, _ in busy)
    assert all("database is busy" in body["detail"] for _, body in busy)
    assert sampler.peak == 2
    text = log.read_text()
    assert "answered 503" in text
    assert "Traceback" not in text


def test_a_page_that_finds_no_connection_free_in_time_is_a_503_page(
    processes, signed_in, postgres, tmp_path
):
    with _sessions_locked(processes, postgres, tmp_path, pool_max=1) as (port, _, caller, sampler):
        held = caller.submit(_get, port, "/api/v1/index/messages", signed_in)
        wait_for(lambda: sampler.waiting_on_a_lock() == 1, timeout=60, what="a held call")
        status, retry, page = _get(port, "/login/")

    assert (status, retry) == (503, "5")
    assert "The console is busy" in page
    assert held.result()[0] == 200


def test_a_threaded_celery_worker_stays_within_the_pool(processes, postgres, tmp_path):
    from workers.celery import app

    name = f"antidote-worker-{uuid.uuid4().hex[:12]}"
    tasks = 60
    app.control.purge()
    for _ in range(tasks):
        app.send_task("workers.tasks.lake_queries_sweep_task", queue="default")
    log = tmp_path / "worker.log"
    with Sampler(postgres, name) as sampler:
        processes.start(
            *["-m", "celery", "-A", "workers", "worker", "-Q", "default", "-P", "threads"],
            *["-c", "8", "-n", f"{name}@%h", "--without-heartbeat", "--without-mingle"],
            *["--without-gossip", "-l", "INFO"],
            log=log,
            env={"DB_POOL_MAX": "2", "DB_APPLICATION_NAME": name},
        )
        wait_for(
            lambda: log.read_text().count("succeeded in") >= tasks,
            timeout=180,
            what=f"the worker to run {tasks} tasks",
        )

    print(f"{tasks} tasks on 8 threads: peak {sampler.peak} connections of 2 allowed")
    assert 1 <= sampler.peak <= 2
    assert "Traceback" not in log.read_text()


class _table_locked:
    """Holds an ACCESS EXCLUSIVE lock on a table from a connection of the test's own, so that
    every statement that reads it waits, holding whatever connection it runs on."""

    def __init__(self, settings, table):
        self.settings = settings
        self.table = table

    def __enter__(self):
        self.db = _connect(self.settings)
        self.db.execute(f'LOCK TABLE "{self.table}" IN ACCESS EXCLUSIVE MODE')
        return self

    def __exit__(self, *exc):
        self.db.rollback()
        self.db.close()
