"""HTTP: a sink only (`sink` POSTs a message to a web service, signed as Standard Webhooks say;
`record` writes its headers). Webhooks come in through the console's ingest API, not a source
here, so HTTP is no kind of source in workers.brokers.registry."""

from workers.brokers.base import (
    DeliveryFailed,
    DeliveryRefused,
    DestinationRefused,
    NoDeliveryUrl,
    Unsendable,
)
from workers.brokers.http.sink import HttpSink, poster, retry_after_of

# `workers.brokers.http.poster` is the handler's path in queue files.
__all__ = [
    "DeliveryFailed",
    "DeliveryRefused",
    "DestinationRefused",
    "HttpSink",
    "NoDeliveryUrl",
    "Unsendable",
    "poster",
    "retry_after_of",
]
