"""The refresh reads the affected messages' histories from the history generations and the events
commits after them: when a few messages changed in a large lake, only their bucket files' row
groups (pyarrow); otherwise every generation (Spark). Either way its read models are what a
full refresh makes of the lake."""

from datetime import timedelta

import pyarrow as pa
import pytest
from django.db import transaction
from django.utils import timezone

from console.ingest.services import messages_ingest
from console.lake.execution import lake_history_compact_if_due
from console.lake.services import epoch_allocate, lake, lake_commit_record
from console.queues.models import Queue
from console.readmodels.execution import read_models_refresh
from tests.retention.conftest import read_models
from workers.jobs.refresh import RefreshParams, targeted
from workers.lake.schema import EVENT_SCHEMA

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MESSAGES = 3_000
T0 = timezone.now() - timedelta(days=1)


def commit(transitions, exception="LookupError"):
    """One events commit of (message, from, to[, queue]) transitions, a second apart; its
    failures raised `exception`."""
    epoch = epoch_allocate(purpose="test refresh history")
    rows = []
    for step, (mid, frm, to, *queue) in enumerate(transitions, start=1):
        failed = frm == "DLNG" and to == "NDLV"
        rows.append(
            {f.name: None for f in EVENT_SCHEMA}
            | {
                "message_id": mid,
                "epoch": epoch,
                "step": step,
                "at": T0 + timedelta(seconds=epoch * 10_000 + step),
                "from_state": frm,
                "to_state": to,
                "queue": queue[0] if queue else "orders",
                "attempt": 1,
                "delivery_count": int(failed),
                "candidate": False,
                "batch_limit": 0,
                "body_version": 1,
                "reason": f"lookup failed for order {mid[2:]}" if failed else None,
                "exception_type": exception if failed else None,
            }
        )
    store = lake()
    table = pa.Table.from_pylist(rows, schema=EVENT_SCHEMA)
    path = store.write_arrow(table, store.new_dir("events", "test"))
    with transaction.atomic():
        lake_commit_record(
            dataset="events", path=path, row_count=table.num_rows, idempotency_key=path
        )


@pytest.fixture
def quarantined(transactional_db, lake_root, spark, settings):
    """MESSAGES messages quarantined, their history in one generation, the read models fresh."""
    settings.REFRESH_ON_COMMIT = False
    queue = Queue(name="orders", handler="tests.handlers_for_tests.scripted")
    queue.full_clean()
    queue.save()
    ids = [f"m-{i:05d}" for i in range(MESSAGES)]
    result = messages_ingest(
        records=[{"id": m, "queue": "orders", "body": "{}"} for m in ids], source="test"
    )
    assert not result.errors
    commit([(m, "TBDL", "DLNG") for m in ids] + [(m, "DLNG", "NDLV") for m in ids])
    lake_history_compact_if_due(force=True, spark=spark)
    read_models_refresh(full=True, spark=spark)
    return ids


def test_a_few_changes_in_a_large_lake_are_read_from_their_bucket_files_only():
    generation = ("/lake/history/g", 1, 9_000)
    assert targeted(RefreshParams(False, [], [], [], "", [generation], new_event_rows=1))
    assert not targeted(RefreshParams(False, [], [], [], "", [generation], new_event_rows=2))
    assert not targeted(RefreshParams(False, [], [], [], "", [], new_event_rows=1))


def test_an_incremental_refresh_over_history_generations_agrees_with_a_full_one(quarantined, spark):
    # One message reprocessed (read from its bucket file: 1 change in 9,000 events), ...
    commit([(quarantined[7], "NDLV", "TBDL")])
    assert read_models_refresh(spark=spark).changed == 1
    assert read_models()["index"][quarantined[7]]["state"] == "TBDL"
    # ... then many, with a commit after the newest generation (every generation scanned).
    lake_history_compact_if_due(force=True, spark=spark)
    commit([(m, "NDLV", "TBDL") for m in quarantined[100:400]])
    commit([(quarantined[7], "TBDL", "DLNG"), (quarantined[7], "DLNG", "NDLV")])
    assert read_models_refresh(spark=spark).changed == 301
    incremental = read_models()

    read_models_refresh(full=True, spark=spark)

    assert read_models() == incremental
    assert incremental["stats"] == {"orders": {"NDLV": MESSAGES - 300, "TBDL": 300}}


@pytest.mark.parametrize("targeted_messages", [0, 50_000], ids=["spark scan", "pyarrow"])
def test_the_affected_messages_metadata_is_the_same_read_either_way(
    quarantined, spark, monkeypatch, targeted_messages
):
    # Few new events: their messages' rows are read with pyarrow from the row groups that may
    # hold them; many: by a Spark scan of every messages commit. Same read models either way.
    monkeypatch.setattr("workers.jobs.refresh.TARGETED_MESSAGES", targeted_messages)
    extra = [f"n-{i:03d}" for i in range(20)]
    messages_ingest(records=[{"id": m, "queue": "orders", "body": "{}"} for m in extra], source="t")
    commit([(quarantined[5], "NDLV", "TBDL"), *((m, "TBDL", "DLNG") for m in extra)])
    assert read_models_refresh(spark=spark).changed == 21
    incremental = read_models()
    assert incremental["index"][extra[3]]["body_path"].startswith("messages/")

    read_models_refresh(full=True, spark=spark)

    assert read_models() == incremental


def test_a_reprocessed_old_failure_leaves_its_group_described_by_the_latest(quarantined, spark):
    from console.readmodels.models import FailureGroup

    group = FailureGroup.objects.get()
    assert group.sample_message_id == quarantined[-1]  # the latest failure

    commit([(quarantined[5], "NDLV", "TBDL")])
    read_models_refresh(spark=spark)

    assert FailureGroup.objects.get().sample_message_id == quarantined[-1]


def test_the_queue_counts_move_by_what_the_refreshed_messages_counted_before_and_now(
    quarantined, spark
):
    # Delivered at once: counted DLVD in their queue, and not in the index.
    delivered = [f"d-{i:03d}" for i in range(20)]
    messages_ingest(
        records=[{"id": m, "queue": "orders", "body": "{}"} for m in delivered], source="t"
    )
    commit([(m, "TBDL", "DLNG") for m in delivered] + [(m, "DLNG", "DLVD") for m in delivered])
    read_models_refresh(spark=spark)
    assert read_models()["stats"] == {"orders": {"DLVD": 20, "NDLV": MESSAGES}}
    # Fifty quarantined reprocessed; five delivered ones sent again, to another queue (a lake
    # query's decision): taken off the orders' DLVD though the index never held them.
    commit(
        [(m, "NDLV", "TBDL") for m in quarantined[:50]]
        + [(m, "DLVD", "TBDL", "payments") for m in delivered[:5]]
    )
    read_models_refresh(spark=spark)
    commit(
        [(m, "TBDL", "DLNG") for m in quarantined[:50]]
        + [(m, "DLNG", "DLVD") for m in quarantined[:30]]
    )
    read_models_refresh(spark=spark)
    incremental = read_models()

    read_models_refresh(full=True, spark=spark)

    assert read_models() == incremental
    assert incremental["stats"] == {
        "orders": {"DLVD": 45, "DLNG": 20, "NDLV": MESSAGES - 50},
        "payments": {"TBDL": 5},
    }


def test_group_counts_move_with_the_changes_and_a_group_a_message_leaves_is_recounted(
    quarantined, spark
):
    from console.readmodels.models import FailureGroup

    # Some reprocessed (they stay in their group, counted TBDL now), one failing another way:
    # it leaves its group for a new one, and the group's first failure with it.
    commit([(m, "NDLV", "TBDL") for m in quarantined[10:20]])
    commit([(quarantined[0], "NDLV", "TBDL")])
    commit([(quarantined[0], "TBDL", "DLNG"), (quarantined[0], "DLNG", "NDLV")], "KeyError")
    read_models_refresh(spark=spark)
    incremental = read_models()
    groups = {g.exception_type: g for g in FailureGroup.objects.all()}
    assert groups["LookupError"].states == {"NDLV": MESSAGES - 11, "TBDL": 10}
    assert groups["KeyError"].states == {"NDLV": 1}

    read_models_refresh(full=True, spark=spark)

    assert read_models() == incremental
