"""What a broker demo's loaded source would drain now, through its own link, as the sources
process drains: the NATS and Redis demo tests read their streams this way."""

from console.ingest.consumers import source_config
from console.queues.models import BrokerSource
from workers.brokers.connector import connector_loaded


def source_drain(name, *, ack, first_wait, then_wait):
    """The ingest records the source `name` fetches until a fetch comes back empty (the first
    waiting `first_wait` seconds, the later ones `then_wait`); acknowledged on the broker
    (drained for good) when `ack`."""
    config = source_config(BrokerSource.objects.get(name=name))
    link = connector_loaded(config.kind).open(config)
    try:
        records, timeout = [], first_wait
        while batch := link.fetch(limit=500, timeout=timeout):
            records += [link.record(delivery) for delivery in batch]
            if ack:
                link.ack(batch)
            timeout = then_wait
        return records
    finally:
        link.close()
