"""The lake's commit protocol: readers see committed output only, compaction swaps a snapshot in
atomically, and a re-run with the same idempotency key does nothing twice."""

import pytest

from console.lake.execution import lake_state_compact_if_due
from console.lake.models import LakeCommit
from console.lake.selectors import lake_state_inputs
from workers.engine import states as S

pytestmark = [pytest.mark.spark]


def test_an_uncommitted_directory_is_invisible_to_delivery(engine, lake_root):
    engine.queue()
    engine.ingest("orders", {"seen": "ok"})
    # Output a crashed writer left behind: a well-formed events directory with no commit row.
    commit = LakeCommit.objects.get(dataset="events")
    stray = lake_root / "events" / "stray"
    stray.parent.mkdir(parents=True, exist_ok=True)
    (lake_root / commit.path).rename(stray)
    (lake_root / commit.path).mkdir()
    assert engine.deliver().claimed == 0
    (lake_root / commit.path).rmdir()
    stray.rename(lake_root / commit.path)
    assert engine.deliver().claimed == 1


def test_compaction_folds_commits_into_a_snapshot_that_delivery_reads(engine, settings):
    engine.queue(max_failed_deliveries=0, backoff_delays=[60])
    ids = engine.ingest("orders", ["ok", "transient", "permanent"])
    engine.deliver()
    before = {m: engine.state(m)["state"] for m in ids}
    snapshot = lake_state_compact_if_due(force=True, spark=engine.spark)
    assert snapshot.row_count == 3
    inputs = lake_state_inputs()
    assert (inputs.snapshot_id, inputs.event_paths) == (snapshot.id, [])
    # The ledger is kept whole: compaction adds a snapshot, it deletes no event.
    assert not LakeCommit.objects.filter(dataset="events", retired=True).exists()
    # Doing it again with nothing new does nothing.
    assert lake_state_compact_if_due(force=True, spark=engine.spark) is None
    engine.later(minutes=2)
    run = engine.deliver()
    assert run.claimed == 1  # only the message waiting for its retry
    assert {m: engine.state(m)["state"] for m in ids} == {**before, ids[1]: S.WAIT}
    assert engine.state(ids[1])["delivery_count"] == 2
