"""The guard every outbound HTTP request of the product goes through: the HTTP sink
(workers.brokers.http), alert webhooks (console.alerts.sending), and the checks made when a
destination is configured (a queue's `url`, a webhook's, a redrive request's own URL).

- `urls`: a URL read once, as the client that sends reads it, and refused when another reader
  could see another host in it;
- `addresses`: loopback, link-local, private, shared, multicast and reserved addresses refused,
  every address a name resolves to checked, unless OUTBOUND_ALLOW_INTERNAL (for demos and
  tests only) lets an address through;
- `sessions`: a requests Session that connects only to the addresses just checked, keeping the
  name for the Host header and TLS, and `excerpt`, the inert few words of an answer a reason may
  keep.

Plain Python (no Django): the HTTP sink runs in Spark executors' children. It reads its
allowance from the environment; the console reads the same variable in its settings.
"""

from workers.outbound.addresses import (
    ALLOW_ENV,
    Allowance,
    AllowanceError,
    OutboundRefused,
    address_refusal,
    allowance_from_environment,
    allowance_parse,
)
from workers.outbound.sessions import excerpt, failure_cause, guarded_session
from workers.outbound.urls import (
    Destination,
    DestinationError,
    destination_check,
    destination_parse,
)

__all__ = [
    "ALLOW_ENV",
    "Allowance",
    "AllowanceError",
    "Destination",
    "DestinationError",
    "OutboundRefused",
    "address_refusal",
    "allowance_from_environment",
    "allowance_parse",
    "destination_check",
    "destination_parse",
    "excerpt",
    "failure_cause",
    "guarded_session",
]
