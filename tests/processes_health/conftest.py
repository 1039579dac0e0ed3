"""Processes as their heartbeats leave them in the console DB, at moments a test chooses, and a
database that is gone."""

import contextlib
import copy
import socket
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from console.processes.services import process_beat, process_beat_start, process_beat_stop
from tests.processes.conftest import processes  # noqa: F401 - a fixture

# Text a task's argument may carry into a process's current work: it must reach pages as text.
HOSTILE = '<script>alert("processes")</script><img src=x onerror=alert(1)>'
HOST = socket.gethostname()


class Beats:
    """Makes processes that started `ago` and last beat `beat` before now (a timedelta each),
    stopped `stopped` before now if given."""

    def __init__(self):
        self.now = timezone.now()

    def process(
        self,
        kind,
        *,
        pid,
        host=HOST,
        ago=timedelta(minutes=5),
        beat=timedelta(0),
        stopped=None,
        current="",
    ):
        started = self.now - ago
        who = {"kind": kind, "host": host, "pid": pid}
        process_beat_start(**who, now=started)
        process_beat(**who, started_at=started, current=current, now=self.now - beat)
        if stopped is not None:
            process_beat_stop(**who, now=self.now - stopped)
        return who


@pytest.fixture
def beats(db):
    return Beats()


@pytest.fixture
def all_alive(beats):
    """One alive process of each kind the deployment runs (no broker source: no consumer)."""
    for pid, kind in enumerate(("web", "spark", "worker", "beat"), start=101):
        beats.process(kind, pid=pid, beat=timedelta(seconds=2))
    return beats


def _closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the block ends: nothing listens


@contextlib.contextmanager
def database_gone(tmp_path):
    """The default database, for the code that runs inside, is one that does not answer: a
    PostgreSQL port nothing listens on, or an SQLite file in a folder that does not exist.
    Nothing is faked: the driver itself fails to connect."""
    good = connections["default"]
    gone_settings = copy.deepcopy(good.settings_dict)
    if good.vendor == "sqlite":
        gone_settings["NAME"] = str(tmp_path / "no-such-folder" / "console.sqlite3")
    else:
        gone_settings.update(HOST="127.0.0.1", PORT=str(_closed_port()))
        # Its own connection, not one of the process's pool (which is keyed by the alias).
        gone_settings["OPTIONS"] = {
            k: v for k, v in gone_settings["OPTIONS"].items() if k != "pool"
        }
    gone = type(good)(gone_settings, "default")
    connections["default"] = gone
    try:
        yield
    finally:
        gone.close()
        connections["default"] = good
