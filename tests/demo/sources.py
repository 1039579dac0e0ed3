"""The NATS and Redis demo tests' shared steps: the demo seeded with only the broker under test,
and what its loaded source would drain now, through its own link, as the sources process does."""

from io import StringIO

from django.core.management import call_command

from console.ingest.consumers import source_config
from console.queues.models import BrokerSource
from tests.brokers.records import as_stored
from workers.brokers.connector import connector_loaded

# The environment variable of each broker demo: a test turns off all but its own.
DEMO_URL_ENVS = ("ANTIDOTE_AMQP_URL", "ANTIDOTE_NATS_URL", "ANTIDOTE_REDIS_STREAMS_URL")


def other_demos_off(monkeypatch, *, but):
    """Only the broker demo whose URL is in `but` runs, whatever the shell has set."""
    for name in DEMO_URL_ENVS:
        if name != but:
            monkeypatch.delenv(name, raising=False)


def demo_seed():
    """seed_demo's output, for ten orders."""
    out = StringIO()
    call_command("seed_demo", "--orders", "10", stdout=out)
    return out.getvalue()


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
