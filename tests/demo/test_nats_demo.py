"""The demo's NATS-fed queue: when a NATS server with JetStream answers, `seed_demo` has a label
service give up on a set of shipments once, and loads the source that drains them; when it does
not, the demo goes on without it and says how to get it. Each test has streams of its own on
the shared server (deleted afterwards)."""

import subprocess
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from console.queues.models import BrokerSource
from tests.brokers.nats.conftest import SHARED_URL, Client, free_port, nats_server_path
from tests.conftest import require_service
from tests.demo.sources import (
    demo_seed,
    demo_source,
    source_drain,
    start_over,
    went_on_without_its_broker,
)
from tests.processes.conftest import port_open, wait_for
from workers.brokers.dead_letters import dead_letter_of
from workers.demo import nats as demo

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("demo_dirs")]


@pytest.fixture
def names(monkeypatch):
    require_service("NATS (JetStream)", port=4222)
    tag = uuid.uuid4().hex[:8].upper()
    names = demo.Names(stream=f"ANTIDOTE_DEMO_TEST_{tag}", subject=f"antidote.demo.test_{tag}")
    monkeypatch.setattr(demo, "NAMES", names)
    monkeypatch.setenv(demo.URL_ENV, SHARED_URL)
    client = Client(SHARED_URL)
    yield names
    for stream in (names.stream, names.capture):
        client.delete_stream(stream)
    client.close()


def _waiting(names):
    """Advisories captured and not drained yet."""
    client = Client(SHARED_URL)
    try:
        return client.stream_info(names.capture).state.messages
    finally:
        client.close()


def _drain(*, ack):
    return source_drain("shipments-nats", ack=ack, first_wait=2.0, then_wait=0.5)


def test_with_nats_the_demo_feeds_a_stream_once_and_its_source_drains_it(names):
    output = demo_seed()

    assert (
        f"NATS demo: {demo.SHIPMENTS} shipments given up on by consumer {names.consumer} of "
        f"stream {names.stream} at 127.0.0.1:4222" in output
    )
    source = demo_source(
        "shipments-nats", dead="shipments-dead", redrive="shipments-redrive", url_env=demo.URL_ENV
    )
    assert (source.kind, source.broker_queue) == ("nats", names.stream)
    assert _waiting(names) == demo.SHIPMENTS
    records = _drain(ack=False)
    assert len(records) == demo.SHIPMENTS
    assert all(r["queue"] == "shipments-dead" for r in records)
    assert {r["headers"]["nats-subject"].rsplit(".", 1)[0] for r in records} == {names.subject}
    reasons = {dead_letter_of(r["headers"]).exception_type for r in records}
    assert reasons == {"nats.max_deliver", "nats.terminated"}

    again = demo_seed()

    assert "NATS demo: already fed at 127.0.0.1:4222." in again
    assert _waiting(names) == demo.SHIPMENTS


def test_without_nats_the_demo_says_how_to_get_the_nats_queue(monkeypatch):
    # A port nothing listens on: the embedded default must not need a server.
    monkeypatch.setenv(demo.URL_ENV, "nats://demo:secret@127.0.0.1:1")

    output = demo_seed()

    assert (
        "NATS demo: off (nothing answers at 127.0.0.1:1; start `nats-server -js` and run make "
        "run again for a NATS-fed queue)." in output
    )
    went_on_without_its_broker(output)


@pytest.fixture
def server_without_jetstream():
    """A nats-server of the test's own, on a free port, started without -js (never the shared
    one)."""
    require_service("nats-server", path=nats_server_path())
    port = free_port()
    process = subprocess.Popen(
        [nats_server_path(), "-a", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: port_open(port), timeout=15, what="nats-server to listen")
        yield port
    finally:
        process.kill()
        process.wait()


def test_a_nats_server_without_jetstream_gets_the_demo_said_how_to_start_it(
    monkeypatch, server_without_jetstream
):
    port = server_without_jetstream
    monkeypatch.setenv(demo.URL_ENV, f"nats://127.0.0.1:{port}")

    output = demo_seed()

    assert (
        f"NATS demo: off (the NATS server at 127.0.0.1:{port} has no JetStream; start "
        "`nats-server -js` and run make run again for a NATS-fed queue)." in output
    )
    assert "Demo ready." in output
    assert not BrokerSource.objects.exists()


def test_without_its_url_the_demo_says_which_variable_to_set(monkeypatch):
    monkeypatch.delenv(demo.URL_ENV, raising=False)

    output = demo_seed()

    assert f"NATS demo: off ({demo.URL_ENV} is not set)" in output
    assert "Demo ready." in output


def test_make_run_sets_the_url_the_demo_says_it_does():
    makefile = (Path(settings.BASE_DIR) / "Makefile").read_text()

    assert f"run: export {demo.URL_ENV} ?= {demo.MAKE_RUN_URL}\n" in makefile


@pytest.mark.django_db(transaction=True)
def test_a_new_database_feeds_the_demo_stream_again_once_it_was_drained(names):
    demo_seed()
    assert len(_drain(ack=True)) == demo.SHIPMENTS
    assert _waiting(names) == 0
    start_over()

    output = demo_seed()

    assert f"NATS demo: {demo.SHIPMENTS} shipments given up on" in output
    assert _waiting(names) == demo.SHIPMENTS
    assert "NATS demo: already fed" in demo_seed()  # this database has it now


@pytest.mark.django_db(transaction=True)
def test_a_new_database_leaves_dead_letters_not_drained_yet_to_be_drained_into_it(names):
    demo_seed()
    start_over()

    output = demo_seed()

    assert (
        f"NATS demo: {demo.SHIPMENTS} dead letters of stream {names.stream} already waiting"
        in output
    )
    assert _waiting(names) == demo.SHIPMENTS  # not doubled
    assert len(_drain(ack=False)) == demo.SHIPMENTS
