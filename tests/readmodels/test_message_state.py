"""The message index as two tables: MessageIndex (what changes rarely, and the text the browser
filters on) inheriting MessageState (what a decision, a delivery or a refresh moves, with its own
few indexes). A decision chunk writes MessageState alone; the browser, the counts and the ORM
see one row. Run on SQLite and, with DATABASE_URL, on PostgreSQL."""

import threading
from datetime import timedelta

import pyarrow as pa
import pytest
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

from console.browse.selectors import message_match_count, message_page
from console.readmodels.deltas import (
    decided_staged,
    index_members,
    index_placement,
    placement_current,
    read_models_apply,
)
from console.readmodels.models import (
    FailureGroup,
    MessageIndex,
    MessageState,
    QueueStat,
    RefreshRun,
)
from console.readmodels.services import INDEX_COLUMNS
from tests.browse.conftest import T0
from workers.jobs.refresh import INDEX_COLUMNS as JOB_INDEX_COLUMNS


def _row(message_id, *, minutes, **fields):
    values = {
        "queue": "orders",
        "original_queue": "orders",
        "state": "NDLV",
        "delivery_count": 5,
        "candidate": False,
        "last_failure_at": T0 - timedelta(minutes=minutes),
        "first_failure_at": T0 - timedelta(hours=1),
        "reason": "order not found",
        "exception_type": "KeyError",
        "group_id": "g-missing",
        "enqueued_at": T0 - timedelta(days=1),
        "updated_at": T0,
        "body_path": "messages/x",
    }
    return MessageIndex(message_id=message_id, **(values | fields))


@pytest.fixture
def quarantined(db):
    """m-00 … m-09 quarantined, the newer failure the higher the number; one group, one queue."""
    MessageIndex.objects.bulk_create(
        [_row(f"m-{i:02d}", minutes=10 - i, candidate=i % 3 == 0) for i in range(10)]
    )
    group = FailureGroup(fingerprint="g-missing", queue="orders", count=10)
    group.states_set({"NDLV": 10})
    group.save()
    QueueStat.objects.create(queue="orders", counts={"NDLV": 10}, updated_at=T0)
    return [f"m-{i:02d}" for i in range(10)]


def _decide(ids, *, to_state="TBDL", **options):
    decided = pa.table(
        {
            "message_id": ids,
            "from_queue": ["orders"] * len(ids),
            "from_state": ["NDLV"] * len(ids),
            "queue": [options.get("target_queue") or "orders"] * len(ids),
            "to_state": [to_state] * len(ids),
        }
    )
    with transaction.atomic(), decided_staged(decided) as staged:
        read_models_apply(
            decided=decided, staged=staged, at=T0 + timedelta(hours=1), reset=True, **options
        )


def _ids(page):
    return [row.message_id for row in page.rows]


def test_the_refresh_loads_the_same_columns_the_job_writes():
    assert sorted(INDEX_COLUMNS) == sorted(JOB_INDEX_COLUMNS)


def test_bulk_create_save_and_update_keep_the_state_rows_copy_of_the_last_failure(quarantined):
    assert MessageState.objects.count() == 10
    copies = dict(MessageState.objects.values_list("message_id", "failure_at"))
    assert copies == dict(MessageIndex.objects.values_list("message_id", "last_failure_at"))

    row = MessageIndex.objects.get(message_id="m-01")
    row.last_failure_at = T0 + timedelta(days=1)
    row.save()
    MessageIndex.objects.filter(message_id="m-02").update(last_failure_at=T0 + timedelta(days=2))

    copies = dict(MessageState.objects.values_list("message_id", "failure_at"))
    assert copies["m-01"] == T0 + timedelta(days=1)
    assert copies["m-02"] == T0 + timedelta(days=2)


def test_deleting_index_rows_deletes_their_state_rows_and_no_other(quarantined):
    MessageIndex.objects.filter(message_id__in=["m-01", "m-02"]).delete()
    MessageIndex.objects.get(message_id="m-03").delete()

    left = [f"m-{i:02d}" for i in range(10) if i not in (1, 2, 3)]
    assert sorted(MessageIndex.objects.values_list("message_id", flat=True)) == left
    assert sorted(MessageState.objects.values_list("message_id", flat=True)) == left
    MessageIndex.objects.all().delete()
    assert (MessageIndex.objects.count(), MessageState.objects.count()) == (0, 0)


def test_a_decision_chunk_leaves_the_browser_filters_by_state_and_candidate_correct(quarantined):
    _decide(quarantined[2:8:2])  # m-02, m-04, m-06

    moved = message_page(filters={"state": "TBDL"}, sort="-last_failure")
    assert _ids(moved) == ["m-06", "m-04", "m-02"]
    kept = message_page(filters={"state": "NDLV"}, sort="-last_failure", size=4)
    assert _ids(kept) == ["m-09", "m-08", "m-07", "m-05"]
    following = message_page(
        filters={"state": "NDLV"}, sort="-last_failure", after=kept.next_cursor, size=4
    )
    assert _ids(following) == ["m-03", "m-01", "m-00"]
    # A reprocess clears the candidate flag (R13): m-06 was one, m-00, m-03 and m-09 still are.
    candidates = message_page(filters={"candidate": "yes"}, sort="last_failure")
    assert _ids(candidates) == ["m-00", "m-03", "m-09"]
    others = message_page(filters={"candidate": "no", "state": "NDLV"}, sort="last_failure")
    assert _ids(others) == ["m-01", "m-05", "m-07", "m-08"]
    assert (
        message_match_count(filters={"state": "TBDL", "since": T0 - timedelta(minutes=6)}).count
        == 2
    )
    by_count = message_page(filters={}, sort="delivery_count", size=4)
    assert _ids(by_count) == ["m-02", "m-04", "m-06", "m-00"]


def test_a_decision_chunk_moves_the_group_and_queue_counts_and_only_the_state_rows(quarantined):
    before = {r["message_id"]: r for r in MessageIndex.objects.values("message_id", *_own_fields())}
    _decide(quarantined[:4])

    row = MessageIndex.objects.get(message_id="m-01")
    assert (row.state, row.delivery_count, row.candidate) == ("TBDL", 0, False)
    assert row.updated_at == T0 + timedelta(hours=1)
    after = {r["message_id"]: r for r in MessageIndex.objects.values("message_id", *_own_fields())}
    assert after == before
    assert FailureGroup.objects.get(fingerprint="g-missing").states == {"NDLV": 6, "TBDL": 4}
    assert QueueStat.objects.get(queue="orders").counts == {"NDLV": 6, "TBDL": 4}


def test_a_reprocess_to_another_queue_moves_the_rows_queue_in_the_wide_table(quarantined):
    _decide(quarantined[:2], target_queue="orders-retry")

    assert dict(
        MessageIndex.objects.filter(message_id__in=quarantined[:3]).values_list(
            "message_id", "queue"
        )
    ) == {"m-00": "orders-retry", "m-01": "orders-retry", "m-02": "orders"}
    page = message_page(filters={"queue": "orders-retry", "state": "TBDL"}, sort="-last_failure")
    assert _ids(page) == ["m-01", "m-00"]


def _own_fields():
    return [f.name for f in MessageIndex._meta.local_concrete_fields if f.name != "state_row"]


@pytest.mark.django_db(transaction=True)
def test_the_migration_carries_every_existing_index_row_into_its_state_row():
    executor = MigrationExecutor(connection)
    before, latest = [("readmodels", "0002_in_flight_run_and_attention")], executor.loader.graph
    leaves = [key for key in latest.leaf_nodes() if key[0] == "readmodels"]
    executor.migrate(before)
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO readmodels_messageindex (message_id, queue, original_queue, state, "
                "run_id, delivery_count, candidate, next_attempt_at, last_failure_at, reason, "
                "exception_type, group_id, sender, conversation_id, body_size, content_type, "
                "body_version, body_path, enqueued_at, updated_at) VALUES "
                "(%s, 'orders', 'orders', 'WAIT', '', 3, %s, %s, %s, 'boom', 'KeyError', 'g', "
                "'', '', 10, '', 1, 'messages/x', %s, %s), "
                "(%s, 'orders', 'orders', 'DLNG', 'run-7', 1, %s, NULL, NULL, '', '', '', "
                "'', '', 10, '', 1, 'messages/x', %s, %s)",
                [
                    "m-wait",
                    True,
                    T0 + timedelta(hours=1),
                    T0,
                    T0 - timedelta(days=1),
                    T0,
                    "m-dlng",
                    False,
                    T0 - timedelta(days=1),
                    T0,
                ],
            )
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(leaves)
    finally:
        # Every app's newest migration: going back also took away those of other apps that
        # depend on these (a later test reads the plan as "every migration applied").
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())

    rows = {r["message_id"]: r for r in MessageIndex.objects.values()}
    assert set(rows) == {"m-wait", "m-dlng"}
    wait, dlng = rows["m-wait"], rows["m-dlng"]
    assert (wait["state"], wait["delivery_count"], wait["candidate"]) == ("WAIT", 3, True)
    assert (wait["next_attempt_at"], wait["failure_at"]) == (T0 + timedelta(hours=1), T0)
    assert (wait["reason"], wait["updated_at"]) == ("boom", T0)
    assert (dlng["state"], dlng["run_id"], dlng["failure_at"]) == ("DLNG", "run-7", None)
    assert message_page(filters={"state": "WAIT"}, sort="-last_failure").rows[0].reason == "boom"


def test_a_decision_chunk_leaves_the_planner_settings_of_its_transaction_as_they_were(quarantined):
    with transaction.atomic():
        _decide(quarantined[:2])
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT current_setting('enable_hashjoin'), current_setting('enable_mergejoin')"
                )
                assert cursor.fetchone() == ("on", "on")
    assert MessageIndex.objects.filter(state="TBDL").count() == 2


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's own index")
def test_the_state_table_has_no_pattern_index_for_its_ids(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'readmodels_messagestate'"
        )
        names = {name for (name,) in cursor.fetchall()}
    assert not [name for name in names if name.endswith("_like")]
    assert {"ix_state_failure", "ix_candidate_failure", "ix_delivery_count_id"} <= names


def test_a_decision_moves_the_queue_counts_from_what_the_index_holds_not_the_lake(quarantined):
    # The index has not folded m-00's latest failure yet: it still says WAIT there, and so do the
    # queue counts, while the plan read NDLV from the lake. The counts move from WAIT, as a
    # later refresh (which reads the index as what they held) expects.
    MessageState.objects.filter(message_id="m-00").update(state="WAIT")
    QueueStat.objects.filter(queue="orders").update(counts={"NDLV": 9, "WAIT": 1})

    _decide(["m-00", "m-01"])

    assert QueueStat.objects.get(queue="orders").counts == {"NDLV": 8, "TBDL": 2}


def test_where_a_chunk_counts_is_read_again_when_a_refresh_committed_since(quarantined):
    # Read while the previous chunk committed ...
    placement = index_placement(quarantined[:2])
    assert placement_current(placement, quarantined[:2]) is placement
    # ... then a refresh moved m-00 to another group before this chunk took the commit lock.
    MessageIndex.objects.filter(message_id="m-00").update(group_id="g-other")
    RefreshRun.objects.create(status=RefreshRun.COMMITTED, started_at=T0, heartbeat_at=T0)

    current = placement_current(placement, quarantined[:2])

    groups = current.rows.to_pydict()
    assert dict(zip(groups["message_id"], groups["group_id"], strict=True)) == {
        "m-00": "g-other",
        "m-01": "g-missing",
    }


@pytest.mark.django_db(transaction=True)
def test_a_chunks_index_read_does_not_wait_for_the_previous_chunks_commit():
    # The next chunk's rows are read, in the thread that prepares it, while the previous chunk
    # commits: the read must not queue behind that transaction (SQLite's begin IMMEDIATE).
    MessageIndex.objects.bulk_create([_row(f"m-{i:02d}", minutes=i) for i in range(3)])
    holding, read = threading.Event(), threading.Event()
    seen = {}

    def commit():
        try:
            with transaction.atomic():
                MessageState.objects.filter(message_id="m-00").update(state="TBDL")
                holding.set()
                seen["read while it held"] = read.wait(timeout=10)
        finally:
            connection.close()

    writer = threading.Thread(target=commit)
    writer.start()
    assert holding.wait(timeout=10)
    rows, placement = index_members(["m-01", "m-02"])
    read.set()
    writer.join()

    assert sorted(rows.column("message_id").to_pylist()) == ["m-01", "m-02"]
    assert set(rows.column("state").to_pylist()) == {"NDLV"}
    assert set(placement.rows.column("group_id").to_pylist()) == {"g-missing"}
    assert seen["read while it held"]
