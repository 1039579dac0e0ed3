"""Handlers the browser tests deliver to. Each fails the way the message's headers say, so the
attacker-controlled text a handler can put in the index (reason, exception type, stack) comes
from the test's data."""

import json

from workers.engine.handlers import PermanentFailure


def refuse(message):
    """Fail permanently with the `reason` header as the reason, raising an exception class named
    by the `exception` header when there is one (a class name is any string to Python)."""
    reason = message.headers.get("reason", "refused")
    name = message.headers.get("exception")
    error = type(name, (PermanentFailure,), {}) if name else PermanentFailure
    raise error(reason)


def orders(message):
    """A JSON order: refused for a missing customer, or failing transiently on its `sku`."""
    order = json.loads(message.body)
    if "customer" not in order:
        raise PermanentFailure("missing field: customer")
    raise ConnectionError(f"inventory service unavailable for {order['sku']}")
