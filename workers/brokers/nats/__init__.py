"""NATS JetStream: `source` drains the messages its consumers gave up on, `sink` publishes
messages back, `record` maps advisories and messages to ingest records and back."""


def __getattr__(name):
    # `workers.brokers.nats.publisher` is the redrive handler's path in queue files;
    # the sink (and the broker's client) is imported only when it is asked for, so reading
    # records (record.py) loads no client.
    if name == "publisher":
        from workers.brokers.nats.sink import publisher

        return publisher
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
