"""The outbound guard (workers.outbound) refuses loopback, and the tests' receivers listen on
127.0.0.1: `outbound_allow("127.0.0.1:<port>")` lets exactly that receiver through, as a demo
would with OUTBOUND_ALLOW_INTERNAL, and nothing else. It sets the variable for this process and
its children (the HTTP sink, workers started after it), the console's setting, and, when the
test runs Spark, the environment of Spark's Python workers (which take theirs from the context,
not from this process). All of it is undone after the test.

`connections` watches what a test connects to, and stops any connect beyond 127.0.0.1. Both
fixtures are everyone's: tests/conftest.py imports them."""

import sys

import pytest

from workers.outbound import ALLOW_ENV, allowance_parse


@pytest.fixture
def outbound_allow(request, monkeypatch, settings):
    allowed = []
    spark = request.getfixturevalue("spark") if "spark" in request.fixturenames else None
    environment = spark.sparkContext.environment if spark is not None else None

    def allow(*entries):
        allowed.extend(entries)
        text = ",".join(allowed)
        monkeypatch.setenv(ALLOW_ENV, text)
        settings.OUTBOUND_ALLOW_INTERNAL = allowance_parse(text)
        if environment is not None:
            environment[ALLOW_ENV] = text

    yield allow
    if environment is not None:
        environment.pop(ALLOW_ENV, None)


class ConnectionsWatched:
    """The sockets this process opens and the names it resolves while watched, from Python's
    audit events (`socket.connect`, `socket.getaddrinfo`). A connect to anything but 127.0.0.1
    is stopped (PermissionError) before it leaves: a test of the guard never reaches out, even
    if the guard failed."""

    active = None
    _hooked = False

    def __init__(self):
        self.connects = []  # (host, port)
        self.lookups = []  # host names, as passed to getaddrinfo

    def __enter__(self):
        if not ConnectionsWatched._hooked:
            sys.addaudithook(ConnectionsWatched._hook)  # once per process: hooks stay
            ConnectionsWatched._hooked = True
        ConnectionsWatched.active = self
        return self

    def __exit__(self, *exc):
        ConnectionsWatched.active = None

    @staticmethod
    def _hook(event, args):
        watched = ConnectionsWatched.active
        if watched is None:
            return
        if event == "socket.getaddrinfo":
            watched.lookups.append(args[0])
        elif event == "socket.connect":
            address = args[1]
            if not (isinstance(address, tuple) and len(address) >= 2):
                return  # a Unix socket: not the network
            watched.connects.append(tuple(address[:2]))
            if address[0] != "127.0.0.1":
                raise PermissionError(f"a test tried to connect to {address[0]}")


@pytest.fixture
def connections():
    """Watch this test's connections and lookups (ConnectionsWatched)."""
    with ConnectionsWatched() as watched:
        yield watched


@pytest.fixture
def receiver(outbound_allow):
    """receiver(*script): a receiver answering `script`, let through by the guard (its address
    and port, nothing else); all are stopped after the test."""
    from tests.brokers.http.receiver import Receiver

    started = []

    def start(*script):
        server = Receiver(script)
        started.append(server)
        outbound_allow(f"127.0.0.1:{server.port}")
        return server

    yield start
    for server in started:
        server.close()
