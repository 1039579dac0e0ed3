"""Every broker, named once: its kind (what a source's `kind` says), its title for people, its
package, the options a source of it takes, and its source and sink classes.

Each broker is a package `workers.brokers.<package>` holding `source.py` (its `Source`, and the
instance `CONNECTOR` the consumer loop uses), `sink.py` (its `Sink` and the `publisher` factory a
redrive queue's handler names) and `record.py` (how its messages map to ingest records and back).
Adding a broker is one package and one line here (docs/guides/adding-a-broker.md); a test keeps
both true (tests/brokers/test_registry.py).

Pure Python: nothing here imports a broker client; a package is imported when first asked for.
"""

from dataclasses import dataclass
from importlib import import_module

from workers.brokers.base import Source, SourceDown


@dataclass(frozen=True)
class Broker:
    kind: str  # a source's `kind`, in queue files and the database: never renamed
    title: str  # for people: the queues page, /api/v1/stats, dead-letter records
    package: str  # workers.brokers.<package>
    source: str  # the Source class in <package>.source
    sink: str  # the Sink class in <package>.sink
    options: tuple = ()  # what a source's `options` may hold, each documented in its guide
    guide: str = ""  # its page under docs/guides/, where each option is documented
    handler: str = ""  # the redrive handler's path, when not "<package>.publisher"

    @property
    def module(self):
        return f"workers.brokers.{self.package}"

    @property
    def redrive_handler(self):
        return self.handler or f"{self.module}.publisher"


RABBITMQ = Broker(
    "rabbitmq",
    "RabbitMQ",
    "rabbitmq",
    "RabbitMQSource",
    "RabbitMQSink",
    guide="rabbitmq-kafka.md",
    # The handler's first path, kept: queue files name it.
    handler="workers.brokers.redrive.publisher",
)
NATS = Broker(
    "nats",
    "NATS JetStream",
    "nats",
    "NatsSource",
    "NatsSink",
    guide="nats.md",
    options=("advisory_stream", "consumer", "remove", "durable", "parking_stream", "ack_wait"),
)
REDIS_STREAMS = Broker(
    "redis",
    "Redis Streams",
    "redis_streams",
    "RedisStreamsSource",
    "RedisStreamsSink",
    guide="redis-streams.md",
    options=(
        "group",
        "groups",
        "consumer",
        "min_deliveries",
        "min_idle_ms",
        "delete",
        "body_field",
    ),
)

BROKERS = {broker.kind: broker for broker in (RABBITMQ, NATS, REDIS_STREAMS)}

# Kinds, and the module that holds each one's `CONNECTOR` (its Source).
CONNECTOR_MODULES = {kind: f"{broker.module}.source" for kind, broker in BROKERS.items()}

# Each kind for people: the queues page and /api/v1/stats name a source's kind by its title.
KIND_TITLES = {kind: broker.title for kind, broker in BROKERS.items()}


def connector(kind: str) -> Source:
    """The source of a kind, imported when first asked for (so a kind's client library is
    loaded only by those that use it). KeyError for an unknown kind."""
    return import_module(CONNECTOR_MODULES[kind]).CONNECTOR


def connector_loaded(kind: str) -> Source:
    """connector(kind), or SourceDown saying in a sentence why it cannot be had: an unknown
    kind, or its module or broker client not installed (a source of that kind then shows down
    with that sentence, and loading a queue file that names one fails with it)."""
    if kind not in CONNECTOR_MODULES:
        raise SourceDown(f"{kind!r} is not a kind of source ({', '.join(CONNECTOR_MODULES)})")
    title = KIND_TITLES.get(kind, kind)
    try:
        return connector(kind)
    except ImportError as exc:
        raise SourceDown(
            f"the {title} connector cannot be loaded ({CONNECTOR_MODULES[kind]}: {exc})"
        ) from exc
    except AttributeError:
        raise SourceDown(
            f"the {title} connector is not ready ({CONNECTOR_MODULES[kind]} has no CONNECTOR)"
        ) from None


def source_class(broker: Broker):
    return getattr(import_module(f"{broker.module}.source"), broker.source)


def sink_class(broker: Broker):
    return getattr(import_module(f"{broker.module}.sink"), broker.sink)
