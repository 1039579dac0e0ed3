"""The broker demos' tests' shared steps: the demo seeded, the source it loaded, what that source
would drain now (through its own link, as the sources process does), a database started over,
and the demo going on without its broker."""

from io import StringIO

from django.core.management import call_command

from console.ingest.consumers import source_config
from console.queues.models import BrokerSource, Queue
from tests.brokers.records import as_stored
from workers.brokers.registry import connector_loaded


def demo_seed():
    """seed_demo's output, for ten orders."""
    out = StringIO()
    call_command("seed_demo", "--orders", "10", stdout=out)
    return out.getvalue()


def demo_on(monkeypatch, demo, *, names, url):
    """The broker demo `demo` (a workers.demo module) turned on, feeding the broker at `url`
    under `names` of the test's own."""
    monkeypatch.setattr(demo, "NAMES", names)
    monkeypatch.setenv(demo.URL_ENV, url)


def source_drain(name, *, ack, first_wait, then_wait):
    """The ingest records (as ingest stores them) the source `name` fetches until a fetch comes
    back empty (the first waiting `first_wait` seconds, the later ones `then_wait`);
    acknowledged on the broker (drained for good) when `ack`."""
    config = source_config(BrokerSource.objects.get(name=name))
    link = connector_loaded(config.kind).open(config)
    try:
        records, timeout = [], first_wait
        while batch := link.fetch(limit=500, timeout=timeout):
            records += [as_stored(link.record(delivery)) for delivery in batch]
            if ack:
                link.ack(batch)
            timeout = then_wait
        return records
    finally:
        link.close()


def demo_source(name, *, dead, redrive, url_env):
    """The source `name` the demo loaded, checked: it drains into the queue `dead`, redrives
    through `redrive`, whose handler reads the broker's address from `url_env`."""
    source = BrokerSource.objects.get(name=name)
    assert (source.queue.name, source.redrive_queue.name) == (dead, redrive)
    assert Queue.objects.get(name=redrive).handler_options == {"url_env": url_env}
    return source


def start_over():
    """var/ deleted: a new, empty database; the broker still holds what the demo fed it. (The
    tests that call it run outside a transaction: PostgreSQL truncates no table with constraint
    checks still pending in the test's own transaction.)"""
    call_command("flush", interactive=False, verbosity=0)


def went_on_without_its_broker(output):
    """The demo was made all the same, said nothing of the address's password nor a traceback,
    and loaded no source."""
    assert "secret" not in output
    assert "Traceback" not in output
    assert "Demo ready." in output
    assert not BrokerSource.objects.exists()
