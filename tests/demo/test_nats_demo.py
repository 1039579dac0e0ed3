"""The demo's NATS-fed queue: when a NATS server with JetStream answers, `seed_demo` has a label
service give up on a set of shipments once, and loads the source that drains them; when it does
not, the demo goes on without it and says how to get it. Each test has streams of its own on
the shared server (deleted afterwards)."""

import subprocess
import uuid

import pytest

from console.queues.models import BrokerSource
from tests.brokers.nats.conftest import SHARED_URL, Client, free_port, nats_server_path
from tests.conftest import require_service
from tests.demo.sources import demo_on, demo_seed, source_drain
from tests.demo.stream_demos import StreamDemoTests
from tests.processes.conftest import port_open, wait_for
from workers.brokers.dead_letters import dead_letter_of
from workers.demo import nats as demo

# The shared NATS server's parking stream: one run at a time (tests/conftest.py, _NATS_TESTS).
pytestmark = [
    pytest.mark.django_db,
    pytest.mark.usefixtures("demo_dirs"),
    pytest.mark.database_blind,
]


@pytest.fixture
def names(monkeypatch):
    require_service("NATS (JetStream)", port=4222)
    tag = uuid.uuid4().hex[:8].upper()
    names = demo.Names(stream=f"ANTIDOTE_DEMO_TEST_{tag}", subject=f"antidote.demo.test_{tag}")
    demo_on(monkeypatch, demo, names=names, url=SHARED_URL)
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


class TestTheNatsDemo(StreamDemoTests):
    title = "NATS"
    count = demo.SHIPMENTS
    source = "shipments-nats"
    kind, dead, redrive = "nats", "shipments-dead", "shipments-redrive"
    address = "127.0.0.1:4222"
    url_env, make_run_url = demo.URL_ENV, demo.MAKE_RUN_URL
    unreachable_url = "nats://demo:secret@127.0.0.1:1"
    off_line = (
        "NATS demo: off (nothing answers at 127.0.0.1:1; start `nats-server -js` and run make "
        "run again for a NATS-fed queue)."
    )

    def waiting(self, broker):
        return _waiting(broker)

    def drain(self, broker, *, ack):
        return _drain(ack=ack)

    def first_fed_line(self, broker):
        return (
            f"NATS demo: {demo.SHIPMENTS} shipments given up on by consumer {broker.consumer} of "
            f"stream {broker.stream} at 127.0.0.1:4222"
        )

    def records_checked(self, broker, records):
        assert {r["headers"]["nats-subject"].rsplit(".", 1)[0] for r in records} == {broker.subject}
        reasons = {dead_letter_of(r["headers"]).exception_type for r in records}
        assert reasons == {"nats.max_deliver", "nats.terminated"}

    def fed_line(self, broker):
        return f"NATS demo: {demo.SHIPMENTS} shipments given up on"

    def still_waiting_line(self, broker):
        return f"NATS demo: {demo.SHIPMENTS} dead letters of stream {broker.stream} already waiting"

    @pytest.mark.django_db(transaction=True)
    def test_a_new_database_leaves_dead_letters_not_drained_yet_to_be_drained_into_it(self, broker):
        super().test_a_new_database_leaves_dead_letters_not_drained_yet_to_be_drained_into_it(
            broker
        )
        assert len(_drain(ack=False)) == demo.SHIPMENTS
