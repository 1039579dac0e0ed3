"""What the engine's tests build their cases from: a fixed time, a queue's policy, a message's
row as the rules see it, and handler messages by body."""

from datetime import UTC, datetime

from workers.engine import states as S
from workers.engine.handlers import Message
from workers.engine.policy import policy_from_mapping

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def rule_policy(**overrides):
    """The "orders" queue's policy, with `overrides`."""
    return policy_from_mapping({"name": "orders", "handler": "json.loads", **overrides})


def rule_row(**overrides):
    """A message of "orders" in delivery, never tried yet, with `overrides`."""
    return {
        "message_id": "m1",
        "state": S.DLNG,
        "queue": "orders",
        "delivery_count": 0,
        "candidate": False,
        "batch_limit": 0,
        "next_attempt_at": None,
        "body_version": 1,
        **overrides,
    }


def handler_messages(bodies, queue="q"):
    """A handler's messages, one a body, with ids m0, m1, ..."""
    return [
        Message(id=f"m{i}", queue=queue, body=b, content_type="text/plain")
        for i, b in enumerate(bodies)
    ]
