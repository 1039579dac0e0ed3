"""Redis Streams: `source` drains poison entries from consumer groups, `sink` appends messages
back to a stream, `record` maps entries to ingest records and back."""


def __getattr__(name):
    # `workers.brokers.redis_streams.publisher` is the redrive handler's path in queue files;
    # the sink (and the broker's client) is imported only when it is asked for, so reading
    # records (record.py) loads no client.
    if name == "publisher":
        from workers.brokers.redis_streams.sink import publisher

        return publisher
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
