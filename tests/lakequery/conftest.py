"""A small lake written by hand, with pyarrow, the way ingest, delivery runs and decisions write
it: five messages whose states, bodies and metadata each query test states its expectations on.

- a-json    orders    NDLV  JSON order, header trace=abc-123, sender shop@, conversation c-1
- b-text    orders    DLVD  text, delivered at the first attempt: never in the message index
- c-binary  payments  NDLV  bytes that are not UTF-8 (but hold the text "payment declined")
- d-edited  orders    TBDL  reprocessed with an edited body: version 2 is the current one
- e-wait    payments  WAIT  text, sender bank@

The messages are in two directories (the edit in its own, as a decision writes it) and the
events in a state snapshot and an events commit after it.
"""

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.ledger_rows import event_row
from tests.message_rows import message_row
from workers.lake.schema import EVENT_SCHEMA, MESSAGE_SCHEMA
from workers.lake.store import Lake

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)

BODIES = {
    "a-json": b'{"order": {"id": 7, "sku": "X-1"}, "items": [{"sku": "A"}]}',
    "b-text": b"hello world, payment declined",
    "c-binary": b"\xff\xfe\x00payment declined\x80",
    "d-edited": b'{"order": {"id": 1}}',
    "e-wait": b"payment declined again",
}
EDITED_BODY = b'{"order": {"id": 2}, "note": "fixed by hand"}'


def message(
    mid, queue, *, version=1, body=None, sender=None, conversation=None, headers=None, at=None
):
    return message_row(
        mid,
        queue,
        body=BODIES[mid] if body is None else body,
        version=version,
        headers=json.dumps(headers or {}),
        conversation_id=conversation,
        sender=sender,
        enqueued_at=at,
    )


def event(mid, epoch, step, frm, to, *, at, queue, count=0, version=1, reason=None):
    columns = {
        "attempt": count,
        "delivery_count": count,
        "body_version": version,
        "reason": reason,
    }
    return event_row(mid, epoch, step, frm, to, at=at, queue=queue, **columns)


ORIGINALS = [
    message(
        "a-json",
        "orders",
        sender="shop@example.test",
        conversation="c-1",
        headers={"trace": "abc-123"},
        at=T0,
    ),
    message(
        "b-text",
        "orders",
        sender="bank@example.test",
        conversation="c-2",
        headers={"x-tenant": "acme"},
        at=T0 + MIN,
    ),
    message("c-binary", "payments", at=T0 + 2 * MIN),
    message("d-edited", "orders", sender="shop@example.test", at=T0 + 3 * MIN),
    message("e-wait", "payments", sender="bank@example.test", conversation="c-2", at=T0 + 4 * MIN),
]
EDITS = [
    message(
        "d-edited",
        "orders",
        version=2,
        body=EDITED_BODY,
        sender="shop@example.test",
        at=T0 + 3 * MIN,
    ),
]
INGESTED = [
    event(
        m["message_id"],
        0,
        0,
        None,
        "TBDL",
        at=m["enqueued_at"],
        queue=m["queue"],
        reason="ingested",
    )
    for m in ORIGINALS
]
H1 = T0 + timedelta(hours=1)
AFTER = [
    event("a-json", 5, 1, "TBDL", "DLNG", at=H1, queue="orders"),
    event(
        "a-json", 5, 2, "DLNG", "NDLV", at=H1, queue="orders", count=1, reason="permanent failure"
    ),
    event("b-text", 5, 3, "TBDL", "DLNG", at=H1, queue="orders"),
    event("b-text", 5, 4, "DLNG", "DLVD", at=H1, queue="orders", reason="delivered"),
    event("c-binary", 5, 5, "TBDL", "DLNG", at=H1, queue="payments"),
    event(
        "c-binary",
        5,
        6,
        "DLNG",
        "NDLV",
        at=H1,
        queue="payments",
        count=1,
        reason="permanent failure",
    ),
    event("d-edited", 5, 7, "TBDL", "DLNG", at=H1, queue="orders"),
    event(
        "d-edited", 5, 8, "DLNG", "NDLV", at=H1, queue="orders", count=1, reason="permanent failure"
    ),
    event(
        "d-edited",
        9,
        0,
        "NDLV",
        "TBDL",
        at=H1 + MIN,
        queue="orders",
        version=2,
        reason="reprocessed with an edited body",
    ),
    event("e-wait", 5, 9, "TBDL", "DLNG", at=H1, queue="payments"),
    event(
        "e-wait",
        5,
        10,
        "DLNG",
        "WAIT",
        at=H1,
        queue="payments",
        count=1,
        reason="ledger service is down",
    ),
]


@dataclass
class Written:
    """Relative directories of the hand-written lake."""

    messages: list
    ingest_events: str  # the events the snapshot folds
    snapshot: str
    events: str  # the events after the snapshot


def write_lake(root, *, extra_messages=(), extra_events=()):
    store = Lake(root)
    originals = store.write_arrow(
        pa.Table.from_pylist([*ORIGINALS, *extra_messages], schema=MESSAGE_SCHEMA),
        store.new_dir("messages", "ingest"),
    )
    edits = store.write_arrow(
        pa.Table.from_pylist(EDITS, schema=MESSAGE_SCHEMA), store.new_dir("messages", "decision")
    )
    # The snapshot is what the ingest events fold to: one event a message.
    ingested = pa.Table.from_pylist([*INGESTED, *extra_events], schema=EVENT_SCHEMA)
    ingest_events = store.write_arrow(ingested, store.new_dir("events", "ingest"))
    snapshot = store.write_arrow(ingested, store.new_dir("state", "snapshot"))
    events = store.write_arrow(
        pa.Table.from_pylist(AFTER, schema=EVENT_SCHEMA), store.new_dir("events", "run")
    )
    return Written(
        messages=[originals, edits], ingest_events=ingest_events, snapshot=snapshot, events=events
    )


@pytest.fixture(scope="module")
def written_lake(tmp_path_factory):
    root = tmp_path_factory.mktemp("lake")
    return root, write_lake(root)


def commit_lake(written):
    """Make the hand-written directories visible as their writers would: messages, the ingest
    events, a snapshot covering them, and the events after it. Returns the last events commit."""
    from django.db import transaction

    from console.lake.services import lake_commit_record

    with transaction.atomic():
        for path in written.messages:
            lake_commit_record(dataset="messages", path=path, row_count=1, idempotency_key=path)
        ingest = lake_commit_record(
            dataset="events", path=written.ingest_events, row_count=5, idempotency_key="ingest"
        )
        lake_commit_record(
            dataset="state",
            path=written.snapshot,
            row_count=5,
            idempotency_key="snapshot",
            covers_upto=ingest.id,
        )
        return lake_commit_record(
            dataset="events", path=written.events, row_count=11, idempotency_key="run"
        )


@pytest.fixture
def committed_lake(lake_root, settings):
    """The hand-written lake in this test's lake folder, committed."""
    settings.REFRESH_ON_COMMIT = False
    written = write_lake(lake_root)
    return written, commit_lake(written)


RESULT_SCHEMA = pa.schema(
    [
        ("message_id", pa.string()),
        ("queue", pa.string()),
        ("state", pa.string()),
        ("delivery_count", pa.int32()),
        ("sender", pa.string()),
        ("conversation_id", pa.string()),
        ("enqueued_at", pa.timestamp("us", tz="UTC")),
        ("body_size", pa.int64()),
        ("reason", pa.string()),
        ("updated", pa.timestamp("us", tz="UTC")),
    ]
)


def result_row(message_id, *, queue="orders", state="NDLV", **fields):
    row = {
        "message_id": message_id,
        "queue": queue,
        "state": state,
        "delivery_count": 1,
        "sender": "shop@example.test",
        "conversation_id": None,
        "enqueued_at": T0,
        "body_size": 10,
        "reason": "permanent failure",
        "updated": T0 + timedelta(hours=1),
    }
    row.update(fields)
    return row


def done_query(requester, rows, *, criteria=None, files=1, scanned=None):
    """A finished query whose result is `rows` (sorted by id), in `files` Parquet files, as the
    job writes it; no Spark needed."""
    from django.utils import timezone

    from console.lake.services import lake
    from console.lakequery.criteria import criteria_read_bodies
    from console.lakequery.models import LakeQuery

    criteria = criteria or {"states": ["NDLV"]}
    store = lake()
    path = store.new_dir("query-results", "test")
    target = store.root / path
    target.mkdir(parents=True)
    rows = sorted(rows, key=lambda r: r["message_id"])
    size = max(1, -(-len(rows) // files))
    for index in range(files):
        part = rows[index * size : (index + 1) * size]
        pq.write_table(
            pa.Table.from_pylist(part, schema=RESULT_SCHEMA), target / f"part-{index:05d}.parquet"
        )
    now = timezone.now()
    return LakeQuery.objects.create(
        requester=requester,
        criteria=criteria,
        body_criteria=criteria_read_bodies(criteria),
        status=LakeQuery.DONE,
        result_path=path,
        matched=len(rows),
        scanned=len(rows) if scanned is None else scanned,
        progress=100,
        started_at=now,
        heartbeat_at=now,
        finished_at=now,
    )
