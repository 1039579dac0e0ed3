"""Reads of a message's lifecycle from the lake, with pyarrow (no Spark on the request path).
Reading never changes anything (R12)."""

import pyarrow.compute as pc

from console.lake.selectors import lake_paths
from console.lake.services import lake

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
