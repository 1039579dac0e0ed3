"""Reads of a message's lifecycle from the lake, with pyarrow (no Spark on the request path).
Reading never changes anything (R12)."""

import pyarrow.compute as pc

from console.delivery.models import PoisonEntry
from console.ingest.models import MessageKey
from console.lake.selectors import lake_paths
from console.lake.services import lake
from workers.engine.states import DLNG, DLVD, is_failure

HISTORY_FIELDS = (
    "at",
    "from_state",
    "to_state",
    "queue",
    "attempt",
    "delivery_count",
    "candidate",
    "next_attempt_at",
    "actor",
    "run_id",
    "reason",
    "exception_type",
    "stack",
)


def message_history(*, message_id):
    """Every event of one message, oldest first."""
    table = lake().read_arrow(
        "events", lake_paths(dataset="events"), filter=pc.field("message_id") == message_id
    )
    rows = table.to_pylist()
    rows.sort(key=lambda r: (r["epoch"], r["step"]))
    return rows


def message_detail(*, message_id):
    """A message's metadata, current state and whole history, or None if it is unknown."""
    key = MessageKey.objects.select_related("commit").filter(message_id=message_id).first()
    if key is None:
        return None
    meta = (
        lake()
        .read_arrow(
            "messages",
            [key.commit.path],
            columns=[
                "message_id",
                "version",
                "queue",
                "body_size",
                "body_sha256",
                "content_type",
                "headers",
                "conversation_id",
                "sender",
                "enqueued_at",
            ],
            filter=pc.field("message_id") == message_id,
        )
        .to_pylist()
    )
    history = message_history(message_id=message_id)
    latest = history[-1] if history else {}
    failure = next((e for e in reversed(history) if is_failure(e["from_state"], e["to_state"])), {})
    # Why it is in its state now: the latest event that is neither ingest nor delivery.
    why = next(
        (
            e
            for e in reversed(history)
            if e["from_state"] is not None and e["to_state"] not in (DLNG, DLVD)
        ),
        {},
    )
    first = meta[0] if meta else {}
    return {
        "id": message_id,
        "queue": latest.get("queue", key.queue),
        "original_queue": first.get("queue", key.queue),
        "state": latest.get("to_state"),
        "delivery_count": latest.get("delivery_count", 0),
        "blacklist_candidate": bool(latest.get("candidate")),
        "batch_limit": latest.get("batch_limit") or None,
        "next_attempt_at": latest.get("next_attempt_at"),
        "reason": why.get("reason"),
        "exception_type": failure.get("exception_type"),
        "on_poison_list": PoisonEntry.objects.filter(message_id=message_id).exists(),
        "body_sha256": key.body_sha256,
        "body_size": first.get("body_size"),
        "content_type": first.get("content_type"),
        "headers": first.get("headers"),
        "conversation_id": first.get("conversation_id"),
        "sender": first.get("sender"),
        "enqueued_at": first.get("enqueued_at"),
        "history": [{f: e[f] for f in HISTORY_FIELDS} for e in history],
    }
