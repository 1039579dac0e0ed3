"""NATS for the tests: the shared server (127.0.0.1:4222, JetStream on), names no other test
uses, a synchronous client of the tests' own, and servers of their own for the tests that stop
one (never the shared one)."""

import asyncio
import contextlib
import shutil
import signal
import socket
import subprocess
import time
import uuid

import nats
import pytest
from nats.js import api

from tests.brokers.source_configs import source_config_of
from tests.conftest import require_service

SHARED_URL = "nats://127.0.0.1:4222"


def nats_server_path():
    return shutil.which("nats-server") or "/usr/sbin/nats-server"


class Client:
    """A test's own connection, synchronous: a consumer that fails messages, a publisher, a
    reader of what arrived."""

    def __init__(self, url):
        self.loop = asyncio.new_event_loop()
        self.nc = self.run(nats.connect(url, allow_reconnect=False, max_reconnect_attempts=1))
        self.js = self.nc.jetstream()

    def run(self, coroutine, timeout=20):
        return self.loop.run_until_complete(asyncio.wait_for(coroutine, timeout))

    def add_stream(self, name, subjects, **config):
        return self.run(self.js.add_stream(name=name, subjects=subjects, **config))

    def publish(self, subject, body, headers=None):
        return self.run(self.js.publish(subject, body, headers=headers))

    def stream_info(self, name):
        return self.run(self.js.stream_info(name))

    def delete_stream(self, name):
        with contextlib.suppress(nats.js.errors.NotFoundError):
            self.run(self.js.delete_stream(name))

    def delete_msg(self, stream, seq):
        return self.run(self.js.delete_msg(stream, seq))

    def worker(self, stream, name, *, max_deliver=2):
        """A durable pull consumer that gives up on a message after `max_deliver` deliveries."""
        self.run(
            self.js.add_consumer(
                stream,
                api.ConsumerConfig(
                    durable_name=name,
                    ack_policy=api.AckPolicy.EXPLICIT,
                    max_deliver=max_deliver,
                    ack_wait=5,
                ),
            )
        )
        return self.run(self.js.pull_subscribe_bind(durable=name, stream=stream))

    def fail_until_given_up(self, sub, *, expected=1):
        """Nak every delivery until the server gives up (its advisory is published on the next
        pull after the last delivery)."""
        idle = 0
        while idle < 2:
            try:
                msgs = self.run(sub.fetch(500, timeout=0.5))
            except TimeoutError:
                idle += 1
                continue
            idle = 0
            for msg in msgs:
                self.run(msg.nak())

    def terminate_next(self, sub):
        msg = self.run(sub.fetch(1, timeout=2))[0]
        self.run(msg.term())
        return msg

    def read_all(self, stream, subject=">"):
        """Every message of `stream` now, through an ephemeral consumer."""
        sub = self.run(
            self.js.pull_subscribe(
                subject,
                stream=stream,
                config=api.ConsumerConfig(ack_policy=api.AckPolicy.EXPLICIT),
            )
        )
        out = []
        while True:
            try:
                msgs = self.run(sub.fetch(100, timeout=0.5))
            except TimeoutError:
                break
            for msg in msgs:
                self.run(msg.ack())
            out += msgs
        self.run(sub.unsubscribe())
        return out

    def close(self):
        try:
            self.run(self.nc.close(), timeout=5)
        finally:
            self.loop.close()


@pytest.fixture
def shared_url():
    require_service("NATS (JetStream)", port=4222)
    return SHARED_URL


@pytest.fixture
def tag():
    return uuid.uuid4().hex[:10].upper()


@pytest.fixture
def client(shared_url):
    c = Client(shared_url)
    made = []
    c.made = made  # streams a test created, deleted after it
    yield c
    for name in made:
        c.delete_stream(name)
    c.close()


def source_config(url, stream, **fields):
    return source_config_of("nats", url=url, url_env="ANTIDOTE_NATS_URL", stream=stream, **fields)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OwnServer:
    """A nats-server of the test's own, on a free port, its store in a temporary folder: stopped,
    paused and started again by the test."""

    def __init__(self, store):
        self.port = free_port()
        self.store = store
        self.url = f"nats://127.0.0.1:{self.port}"
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [
                nats_server_path(),
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-sd",
                str(self.store),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nats-server did not start")

    def pause(self):
        """Stop the server (SIGSTOP), and return once the kernel says it is stopped: a signal is
        delivered a moment after it is sent, and the server may still answer meanwhile."""
        self.process.send_signal(signal.SIGSTOP)
        stat = f"/proc/{self.process.pid}/stat"
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with open(stat) as f:
                # The state follows the command's name in parentheses: "T" when stopped.
                if f.read().rpartition(")")[2].split()[0] == "T":
                    return
            time.sleep(0.01)
        raise RuntimeError("nats-server did not stop")

    def kill(self):
        self.process.send_signal(signal.SIGCONT)
        self.process.kill()
        self.process.wait()

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.kill()


@pytest.fixture
def own_server(tmp_path):
    require_service("nats-server", path=nats_server_path())
    server = OwnServer(tmp_path / "nats-store")
    server.start()
    yield server
    server.stop()
