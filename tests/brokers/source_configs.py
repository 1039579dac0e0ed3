"""A source's settings as the broker tests open it, whatever its broker: draining one stream
into the intake queue orders-dead, a hundred at a time."""

from workers.brokers.base import SourceConfig

# What a test does not name. Any other field a test names is one of its kind's options.
_SOURCE_DEFAULTS = {"name": "orders-dlq", "into": "orders-dead", "prefetch": 100, "batch_size": 100}


def source_config_of(kind, *, url, url_env, stream, **fields):
    source = {name: fields.pop(name, default) for name, default in _SOURCE_DEFAULTS.items()}
    return SourceConfig(
        kind=kind, url=url, url_env=url_env, drained=stream, options=fields, **source
    )
