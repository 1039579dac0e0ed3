"""Redis for the Redis Streams tests: the shared server on 127.0.0.1:6379, database 7 (Celery
uses 0 and the soak benchmark 11), with keys of each test's own, deleted afterwards; and, for
tests that stop Redis, a server of the test's own on a free port (never the shared one)."""

import contextlib
import shutil
import subprocess
import time
import uuid

import pytest
import redis

from tests.brokers.source_configs import source_config_of
from tests.conftest import require_service
from tests.processes.conftest import free_port, port_open, wait_for
from workers.brokers.redis_streams.source import CONNECTOR

SHARED_URL = "redis://127.0.0.1:6379/7"
URL_ENV = "ANTIDOTE_TEST_REDIS_STREAMS_URL"


class Streams:
    """A client of the test's own and a prefix for every key it makes (deleted at the end)."""

    def __init__(self, url):
        self.url = url
        self.client = redis.Redis.from_url(url)
        self.prefix = f"antidote-test:{uuid.uuid4().hex[:10]}:"

    def key(self, what):
        return self.prefix + what

    def poisoned(self, stream, group, fields, *, reads, consumer="worker-1", entry_id="*"):
        """Append an entry that consumer `consumer` of `group` reads `reads` times and never
        acknowledges (the first read a new delivery, the others re-reads of its history, as a
        consumer that retries on start does); the entry id."""
        if not self.client.exists(stream):
            self.client.xgroup_create(stream, group, id="$", mkstream=True)
        elif group.encode() not in {g["name"] for g in self.client.xinfo_groups(stream)}:
            # Only what is appended from now on: the next read is of the entry added below.
            self.client.xgroup_create(stream, group, id="$")
        # A list of pairs may give a name twice, which a dict cannot.
        pairs = fields.items() if isinstance(fields, dict) else fields
        flat = [part for pair in pairs for part in pair]
        entry_id = self.client.execute_command("XADD", stream, entry_id, *flat).decode()
        self.client.xreadgroup(group, consumer, {stream: ">"}, count=1)
        for _ in range(reads - 1):
            # A re-read of history starts after the id given: just before this entry's.
            self.client.xreadgroup(group, consumer, {stream: _before(entry_id)}, count=1)
        return entry_id

    def pending(self, stream, group):
        """{entry id: (consumer, times delivered)} of a group's pending entries."""
        rows = self.client.xpending_range(stream, group, "-", "+", 1000)
        return {
            r["message_id"].decode(): (r["consumer"].decode(), r["times_delivered"]) for r in rows
        }

    def close(self):
        for key in self.client.scan_iter(match=self.prefix + "*"):
            self.client.delete(key)
        self.client.close()


def _before(entry_id):
    ms, seq = (int(part) for part in entry_id.split("-"))
    return f"{ms}-{seq - 1}" if seq else f"{ms - 1}-{2**64 - 1}"


@pytest.fixture
def streams(monkeypatch):
    require_service("Redis", port=6379)
    monkeypatch.setenv(URL_ENV, SHARED_URL)
    streams = Streams(SHARED_URL)
    yield streams
    streams.close()


def source_config(stream, *, url=SHARED_URL, **fields):
    return source_config_of(
        "redis", url=url, url_env=URL_ENV, stream=stream, prefetch=200, **fields
    )


@contextlib.contextmanager
def link_of(stream, **options):
    link = CONNECTOR.open(source_config(stream, **options))
    try:
        yield link
    finally:
        link.close()


class OwnRedis:
    """A redis-server of the test's own, on a free port, that the test may stop and start."""

    def __init__(self):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(lambda: port_open(self.port), timeout=20, what="the test's own redis-server")

    def stop(self):
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=20)
            self.process = None
        # The port is closed once the process is gone; a moment for the kernel to say so.
        deadline = time.monotonic() + 5
        while port_open(self.port) and time.monotonic() < deadline:
            time.sleep(0.05)


@pytest.fixture
def own_redis():
    require_service("redis-server", path="redis-server")
    assert shutil.which("redis-server")
    server = OwnRedis()
    server.start()
    yield server
    server.stop()
