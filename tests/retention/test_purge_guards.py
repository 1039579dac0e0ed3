"""What keeps a purge from doing harm: the swap refuses commits that changed since they were
read; the refresh lock keeps refreshes from loading rows computed from the lake as it was; a
purge that fails leaves the lake, the catalog and the read models as they were."""

import shutil
from datetime import timedelta

import pyarrow as pa
import pytest
from django.db import transaction
from django.utils import timezone

from console.audit.models import AuditEntry
from console.lake.models import LakeCommit
from console.lake.services import LakeChanged, lake, lake_commit_record, lake_commits_rewrite
from console.readmodels.deltas import RefreshBusy, refresh_lock_held, refresh_lock_still_held
from console.readmodels.execution import read_models_refresh
from console.readmodels.models import RefreshRun
from console.retention.models import PurgeRun
from tests.retention.conftest import read_models
from workers.lake.schema import EVENT_SCHEMA


def _commit(dataset, path, *, covers_upto=None):
    with transaction.atomic():
        return lake_commit_record(
            dataset=dataset,
            path=path,
            row_count=1,
            idempotency_key=path,
            covers_upto=covers_upto,
        )


@pytest.fixture
def catalog(db):
    return {
        "e1": _commit("events", "events/d/e1"),
        "e2": _commit("events", "events/d/e2"),
        "m1": _commit("messages", "messages/d/m1"),
        "s1": _commit("state", "state/d/s1", covers_upto=2),
    }


def _rewrite(catalog, **overrides):
    s1 = catalog["s1"]
    arguments = dict(
        rewritten={catalog["e1"].id: ("events/d/e1", "events/d/e1-new", 5)},
        emptied={catalog["m1"].id: "messages/d/m1"},
        snapshot_read=(s1.id, s1.path),
        snapshot_new=("state/d/s1-new", 7),
        idempotency_key="state:purge:test",
    )
    with transaction.atomic():
        return lake_commits_rewrite(**(arguments | overrides))


def test_a_rewrite_keeps_each_commits_id_retires_the_empty_and_replaces_the_snapshot(catalog):
    gone = _rewrite(catalog)

    e1 = LakeCommit.objects.get(id=catalog["e1"].id)
    assert (e1.path, e1.row_count, e1.retired) == ("events/d/e1-new", 5, False)
    assert LakeCommit.objects.get(id=catalog["m1"].id).retired
    assert LakeCommit.objects.get(id=catalog["s1"].id).retired
    snapshot = LakeCommit.objects.get(dataset="state", retired=False)
    assert (snapshot.path, snapshot.row_count, snapshot.covers_upto) == ("state/d/s1-new", 7, 2)
    assert snapshot.id > catalog["s1"].id
    assert sorted(gone) == ["events/d/e1", "messages/d/m1", "state/d/s1"]


def test_a_commit_changed_since_it_was_read_stops_the_rewrite(catalog):
    LakeCommit.objects.filter(id=catalog["e1"].id).update(path="events/d/e1-other")

    with pytest.raises(LakeChanged, match="changed since they were read"):
        _rewrite(catalog)

    assert LakeCommit.objects.get(id=catalog["m1"].id).retired is False


def test_a_snapshot_committed_since_the_lake_was_read_stops_the_rewrite(catalog):
    # A compaction built it from the data the purge removes: it must not stay the newest.
    _commit("state", "state/d/s2", covers_upto=2)

    with pytest.raises(LakeChanged, match="state snapshot"):
        _rewrite(catalog)

    assert LakeCommit.objects.get(id=catalog["e1"].id).path == "events/d/e1"


def test_a_history_generation_committed_since_the_lake_was_read_stops_the_rewrite(catalog):
    # A compaction folded the data the purge removes into a generation the purge never read.
    _commit("history", "history/d/h1", covers_upto=2)

    with pytest.raises(LakeChanged, match="history generation"):
        _rewrite(catalog)

    assert LakeCommit.objects.get(id=catalog["e1"].id).path == "events/d/e1"


def test_a_history_generation_read_is_rewritten_in_place_like_any_commit(catalog):
    h1 = _commit("history", "history/d/h1", covers_upto=2)

    gone = _rewrite(
        catalog, rewritten={h1.id: ("history/d/h1", "history/d/h1-new", 3)}, history_read=[h1.id]
    )

    h1.refresh_from_db()
    assert (h1.path, h1.row_count, h1.retired, h1.covers_upto) == ("history/d/h1-new", 3, False, 2)
    assert "history/d/h1" in gone


def _events_commit():
    store = lake()
    row = {f.name: None for f in EVENT_SCHEMA} | {
        "message_id": "m-1",
        "epoch": 1,
        "step": 1,
        "at": timezone.now(),
        "to_state": "TBDL",
        "queue": "orders",
    }
    path = store.write_arrow(
        pa.Table.from_pylist([row], schema=EVENT_SCHEMA), store.new_dir("events", "one")
    )
    return _commit("events", path)


def test_a_refresh_while_the_lock_is_held_is_skipped(transactional_db, lake_root, settings):
    settings.REFRESH_ON_COMMIT = False
    _events_commit()

    with refresh_lock_held(holder="purge 1") as lock:
        assert refresh_lock_still_held(lock)
        assert read_models_refresh() is None

    assert not RefreshRun.objects.exists()


def test_the_lock_waits_for_a_live_refresh_and_takes_over_a_dead_ones(db, settings):
    now = timezone.now()
    live = RefreshRun.objects.create(started_at=now, heartbeat_at=now)

    with pytest.raises(RefreshBusy), refresh_lock_held(holder="purge 1", wait_seconds=0):
        pass

    RefreshRun.objects.filter(id=live.id).update(
        heartbeat_at=now - timedelta(seconds=settings.LEASE_SECONDS + 1)
    )
    with refresh_lock_held(holder="purge 1", wait_seconds=0) as lock:
        assert refresh_lock_still_held(lock)
    live.refresh_from_db()
    assert live.status == RefreshRun.FAILED


@pytest.mark.spark
@pytest.mark.slow
def test_a_purge_that_fails_leaves_everything_as_it_was(shore, lake_root):
    shore.queue("orders", retention_days=1)
    shore.ingest("orders", {"a": "a", "b": "b"})
    lives = shore.live({"a": "DLVD", "b": "NDLV"})
    shore.refresh()
    catalog = list(LakeCommit.objects.order_by("id").values_list("id", "path", "retired"))
    models = read_models()
    # A directory of the lake lost (a disk error, a hand that slipped): the job cannot read it.
    shutil.rmtree(lake_root / lives.path)

    purge = shore.purge()

    assert purge.status == PurgeRun.FAILED
    assert "Exception" in purge.error or "Error" in purge.error
    assert list(LakeCommit.objects.order_by("id").values_list("id", "path", "retired")) == catalog
    assert read_models() == models
    assert not (lake_root / purge.work_dir).exists()
    assert not list(lake_root.glob(f"*/*/purge{purge.id}-*"))  # nothing of it left behind
    assert not RefreshRun.objects.filter(status=RefreshRun.RUNNING).exists()
    entry = AuditEntry.objects.get(action="retention.failed")
    assert (entry.actor, entry.target_id) == ("system", str(purge.id))
