"""Real processes beat from their start: the web as runserver serves it (autoreloader included,
as the Procfile starts it: only its serving child beats), and the broker sources' consumer,
which says it stopped when SIGTERM ends it cleanly."""

import signal
import urllib.request

import pytest

from console.processes.models import ProcessBeat
from tests.processes.conftest import free_port, port_open, wait_for

pytestmark = pytest.mark.slow


def _beat(kind):
    return ProcessBeat.objects.filter(kind=kind).first()


def test_the_web_beats_from_its_start_under_runserver(processes, tmp_path):
    port = free_port()
    web = processes.start("manage.py", "runserver", f"127.0.0.1:{port}", log=tmp_path / "web.log")
    wait_for(lambda: port_open(port), timeout=120, what="runserver to listen")

    row = wait_for(lambda: _beat("web"), timeout=30, what="the web's heartbeat")
    # The reloader's parent serves nothing and does not beat: one web, its serving child.
    assert row.pid != web.pid
    assert ProcessBeat.objects.filter(kind="web").count() == 1
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as answer:
        assert answer.status == 200


def test_the_sources_consumer_beats_and_says_it_stopped_on_sigterm(processes, tmp_path):
    consumer = processes.start("manage.py", "consume_sources", log=tmp_path / "sources.log")

    row = wait_for(lambda: _beat("sources"), timeout=120, what="the consumer's heartbeat")
    assert row.pid == consumer.pid and row.stopped_at is None

    consumer.send_signal(signal.SIGTERM)
    assert consumer.wait(timeout=60) == 0
    row.refresh_from_db()
    assert row.stopped_at is not None
