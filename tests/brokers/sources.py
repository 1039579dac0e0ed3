"""A broker source as the tests drive it, whatever its kind: loaded from a queue file that drains
it into one intake queue, run by the consumer loop in a thread, or by `manage.py consume_sources`
killed mid-drain and started again."""

import contextlib
import signal
import threading
import time
from collections import Counter

from django.db import connection

from console.ingest.consumers import source_consume
from console.ingest.models import MessageKey
from console.queues.models import BrokerSource
from console.queues.services import queues_load
from console.queues.sources import INTAKE_HANDLER
from console.readmodels.models import MessageIndex
from tests.ingest.conftest import lake_events, lake_messages
from tests.processes.conftest import wait_for

INTO = "orders-dead"
MANAGE = ("manage.py", "consume_sources")  # as the Procfile starts it


def source_load(*, name, kind, url_env, stream, options, batch_size=4, **fields):
    """Load one source of `kind` draining `stream` into the intake queue INTO."""
    source = {
        "name": name,
        "kind": kind,
        "url_env": url_env,
        "broker_queue": stream,
        "queue": INTO,
        "batch_size": batch_size,
        **fields,
        "options": options,
    }
    queues_load(data={"queues": [{"name": INTO, "handler": INTAKE_HANDLER}], "sources": [source]})
    return BrokerSource.objects.select_related("queue").get(name=name)


@contextlib.contextmanager
def consuming(source):
    """The consumer loop draining `source` in a thread; yields what it says."""
    stop, said = threading.Event(), []

    def run():
        try:
            source_consume(source, stop=stop, say=said.append)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield said
    finally:
        stop.set()
        thread.join(timeout=30)
        assert not thread.is_alive(), "the consumer did not stop"


def consumed_until(source, *, drained, refused):
    """Run the consumer loop on `source` until it has drained at least `drained` and parked
    `refused`: the source then, its last error while the loop ran, and what the loop said."""
    with consuming(source) as said:
        wait_for(lambda: source_now(source).drained >= drained, timeout=60, what="the drain")
        wait_for(lambda: source_now(source).refused == refused, timeout=60, what="the parking")
        last_error = source_now(source).last_error
    return source_now(source), last_error, said


def source_now(source):
    return BrokerSource.objects.get(pk=source.pk)


def stored(queue=INTO):
    return MessageKey.objects.filter(queue=queue).count()


def killed_and_started_again(processes, source, *, env, logs, count, drained, after_kill=None):
    """Run `manage.py consume_sources` for `source`, SIGKILL it once a few batches are in, start
    it again and stop it (SIGTERM) once all `count` are stored and `drained()` says the broker
    holds nothing more; then each is stored once and the source stopped, having refused none.
    `after_kill()` looks at the broker in between. How many were stored before the kill."""
    command = (*MANAGE, "--source", source.name)
    started = time.monotonic()
    first = processes.start(*command, log=logs / "first.log", env=env)
    # Killed as soon as a few batches are in: SIGKILL, with a batch taken and not acknowledged.
    while stored() < 200:
        assert first.poll() is None, (logs / "first.log").read_text()
        assert time.monotonic() - started < 120, "the first consumer stored nothing"
        time.sleep(0.01)
    processes.kill(first)
    killed_at = stored()
    assert 200 <= killed_at < count, f"the kill came too late: {killed_at} stored"
    if after_kill is not None:
        after_kill()
    print(f"{killed_at} stored before the kill")

    second = processes.start(*command, log=logs / "second.log", env=env)
    wait_for(lambda: stored() == count, timeout=300, what="every message stored")
    wait_for(drained, timeout=60, what="every message acknowledged on the broker")
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=30) == 0
    assert_stored_once_each(count)
    source.refresh_from_db()
    assert (source.refused, source.state) == (0, "stopped")
    return killed_at


def assert_stored_once_each(count):
    """The lake holds `count` messages of INTO, each ingested once."""
    ids = [m for m, row in lake_messages().items() if row["queue"] == INTO]
    assert len(ids) == count
    per_message = Counter(e["message_id"] for e in lake_events() if e["queue"] == INTO)
    assert set(per_message.values()) == {1}  # one TBDL each: nothing ingested twice
    assert len(per_message) == count


def round_trip_load(*, name, url_env, stream, sink, kind=None, options=None):
    """Load a source `name` draining `stream` into the intake queue refunds-dead, its messages
    redriven by the queue refunds-redrive with the handler `sink`."""
    source = {
        "name": name,
        "url_env": url_env,
        "broker_queue": stream,
        "queue": "refunds-dead",
        "redrive_queue": "refunds-redrive",
        "batch_size": 5,
    }
    if kind is not None:
        source["kind"] = kind
    if options is not None:
        source["options"] = options
    redrive = {"name": "refunds-redrive", "handler": sink, "handler_options": {"url_env": url_env}}
    queues = [{"name": "refunds-dead", "handler": INTAKE_HANDLER}, redrive]
    queues_load(data={"queues": queues, "sources": [source]})


def drained_until(source_name, *, into, count, done):
    """The consumer loop on the source `source_name`, run until `count` messages are stored in
    `into` and `done()` says the broker holds no more (a minute at the most); then each is
    stored once and the source counts them all drained, none refused."""
    stop = threading.Event()
    source = BrokerSource.objects.get(name=source_name)
    thread = threading.Thread(target=source_consume, args=(source,), kwargs={"stop": stop})
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if stored(into) >= count and done():
                break
            time.sleep(0.2)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert stored(into) == count
    source.refresh_from_db()
    assert (source.drained, source.refused) == (count, 0)


def intake_quarantined(desk, *, count):
    """What the round trip's source drained into refunds-dead, delivered once to the intake
    handler: all `count` quarantined. The quarantined rows of the index."""
    desk.deliver_until_idle()
    desk.refresh()
    quarantined = MessageIndex.objects.filter(queue="refunds-dead", state="NDLV")
    assert quarantined.count() == count
    return quarantined


def redriven(desk):
    """Every message of refunds-dead sent back through refunds-redrive by an approved request,
    delivered until nothing is due."""
    scope = {"kind": "filter", "filters": {"queue": "refunds-dead"}}
    request = desk.request(scope, target_queue="refunds-redrive")
    assert desk.execute(request).status == "done"
    desk.deliver_until_idle()
