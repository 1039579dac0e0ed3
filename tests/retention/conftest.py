"""A `shore`: messages ingested through the real service (bodies in real lake files, message
keys), their later lives written to the ledger by hand (one events commit, as a delivery run or a
decision commits theirs) so that each ends in the state and at the time a test chooses, the read
models refreshed by the real refresh, and purges run by the real service on the real Spark
session."""

from datetime import timedelta

import pyarrow as pa
import pytest
from django.db import transaction
from django.utils import timezone

from console.ingest.services import messages_ingest
from console.lake.models import LakeCommit
from console.lake.services import epoch_allocate, lake, lake_commit_record
from console.queues.models import Queue
from console.readmodels.execution import read_models_refresh
from console.readmodels.models import FailureGroup, MessageIndex, QuarantineInflow, QueueStat
from console.retention.execution import purge_run
from tests.ledger_rows import event_row
from workers.lake.schema import EVENT_SCHEMA

STACK = (
    "Traceback (most recent call last):\n"
    '  File "/srv/shop/handlers.py", line 12, in handle\n'
    "    raise LookupError(order)\n"
)

# Lives a message may be given: (from, to) transitions after ingest, a failure where to is NDLV
# or WAIT after DLNG.
LIVES = {
    "TBDL": [],
    "DLNG": [("TBDL", "DLNG")],
    "WAIT": [("TBDL", "DLNG"), ("DLNG", "WAIT")],
    "DLVD": [("TBDL", "DLNG"), ("DLNG", "DLVD")],
    "NDLV": [("TBDL", "DLNG"), ("DLNG", "NDLV")],
    "FAIL": [("TBDL", "DLNG"), ("DLNG", "NDLV"), ("NDLV", "FAIL")],
    "ENDED": [("TBDL", "DLNG"), ("DLNG", "NDLV"), ("NDLV", "ENDED")],
    # failed once, then delivered: indexed although delivered
    "DLVD-after-failure": [
        ("TBDL", "DLNG"),
        ("DLNG", "WAIT"),
        ("WAIT", "TBDL"),
        ("TBDL", "DLNG"),
        ("DLNG", "DLVD"),
    ],
}


def _event(mid, epoch, step, frm, to, *, at, queue, reason=None):
    failed = frm == "DLNG" and to in ("WAIT", "NDLV", "TBDL")
    columns = {
        "attempt": 1,
        "delivery_count": 1 if failed else 0,
        "reason": (reason or "order lookup failed") if failed else None,
        "exception_type": "LookupError" if failed else None,
        "stack": STACK if failed else None,
    }
    return event_row(mid, epoch, step, frm, to, at=at, queue=queue, **columns)


class Shore:
    def __init__(self, spark):
        self.spark = spark

    def queue(self, name="orders", retention_days=1):
        queue = Queue(name=name, handler="tests.handlers_for_tests.scripted")
        queue.retention_days = retention_days
        queue.full_clean()
        queue.save()
        return queue

    def ingest(self, queue, bodies):
        records = [{"id": mid, "queue": queue, "body": body} for mid, body in bodies.items()]
        result = messages_ingest(records=records, source="test")
        assert not result.errors, result.errors
        return list(bodies)

    def live(self, lives, *, queue="orders", at=None, reasons=None):
        """Give each message {id: life} its life (LIVES), in one events commit. Each step is a
        second after the one before, from `at` (by default now)."""
        at = at or timezone.now()
        epoch = epoch_allocate(purpose="test lives")
        rows, step = [], 0
        for mid, life in lives.items():
            for frm, to in LIVES[life]:
                step += 1
                reason = (reasons or {}).get(mid)
                rows.append(
                    _event(mid, epoch, step, frm, to, at=at + timedelta(seconds=step),
                           queue=queue, reason=reason)
                )  # fmt: skip
        store = lake()
        table = pa.Table.from_pylist(rows, schema=EVENT_SCHEMA)
        path = store.write_arrow(table, store.new_dir("events", "lives"))
        with transaction.atomic():
            return lake_commit_record(
                dataset="events",
                path=path,
                row_count=table.num_rows,
                idempotency_key=f"test-lives:{epoch}",
                epoch=epoch,
            )

    def refresh(self, *, full=False):
        return read_models_refresh(full=full, spark=self.spark)

    def purge(self, *, days=10, **kwargs):
        """A purge as of `days` days from now."""
        return purge_run(now=timezone.now() + timedelta(days=days), spark=self.spark, **kwargs)


def read_models():
    """Everything the read models hold, comparable between two moments."""
    return {
        "index": {r["message_id"]: r for r in MessageIndex.objects.values()},
        "groups": {g["fingerprint"]: g for g in FailureGroup.objects.values()},
        "stats": {s.queue: s.counts for s in QueueStat.objects.all()},
        "inflow": sorted(QuarantineInflow.objects.values_list("queue", "hour", "flow", "count")),
    }


def committed_paths(dataset):
    return list(
        LakeCommit.objects.filter(dataset=dataset, retired=False)
        .order_by("id")
        .values_list("path", flat=True)
    )


@pytest.fixture
def shore(transactional_db, lake_root, spark, settings):
    # Events commits would otherwise ask a worker for a refresh; the tests refresh themselves.
    settings.REFRESH_ON_COMMIT = False
    return Shore(spark)
