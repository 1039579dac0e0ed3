"""A purge and the history generations (R15): the purged messages' events leave the generations
as they leave the events commits, the others' histories stay as they were, and a compaction
that read the lake before a purge swapped it commits nothing."""

from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.utils import timezone

from console.delivery.selectors import message_history
from console.lake.execution import (
    lake_history_compact_if_due,
    lake_history_fold,
    lake_history_fold_commit,
    lake_state_compact_if_due,
)
from console.lake.models import LakeCommit, LakeRewrite
from console.lake.services import lake_rewrite_held
from console.retention.models import PurgeRun

pytestmark = [pytest.mark.spark, pytest.mark.slow]

KEPT = {"m-tbdl": "TBDL", "m-ndlv": "NDLV", "m-wait": "WAIT"}
PURGED = {"m-dlvd": "DLVD", "m-fail": "FAIL", "m-ended": "ENDED"}


def ids_in(root, relpath):
    """Every message id in a directory's Parquet files."""
    found = set()
    for path in (Path(root) / relpath).rglob("*.parquet"):
        found |= set(pq.read_table(path, columns=["message_id"])["message_id"].to_pylist())
    return found


@pytest.fixture
def lived(shore):
    shore.queue("orders", retention_days=1)
    lives = KEPT | PURGED
    shore.ingest("orders", {mid: f"body of {mid}" for mid in lives})
    shore.live(lives)
    return lives


def test_a_purge_takes_the_purged_messages_out_of_the_history_generations(shore, lived, lake_root):
    older = lake_history_compact_if_due(force=True, spark=shore.spark)
    # A later message, alone in a generation of its own (too small to merge with the first),
    # and final: its generation is left with nothing.
    shore.ingest("orders", {"m-late": "body of m-late"})
    shore.live({"m-late": "DLVD"})
    newer = lake_history_compact_if_due(force=True, spark=shore.spark)
    assert not LakeCommit.objects.get(id=older.id).retired
    before = {mid: message_history(message_id=mid) for mid in KEPT}
    assert {mid: h[-1]["to_state"] for mid, h in before.items()} == KEPT

    purge = shore.purge()

    assert purge.status == PurgeRun.DONE, purge.error
    assert purge.total == 4
    assert purge.lake_changes["history"] == {"rewritten": 1, "retired": 1}
    rewritten = LakeCommit.objects.get(id=older.id)
    assert not rewritten.retired and rewritten.path != older.path
    assert (rewritten.buckets, rewritten.covers_upto) == (older.buckets, older.covers_upto)
    assert ids_in(lake_root, rewritten.path) == set(KEPT)
    assert rewritten.row_count == sum(len(history) for history in before.values())
    assert LakeCommit.objects.get(id=newer.id).retired
    for mid in [*PURGED, "m-late"]:
        assert message_history(message_id=mid) == []
    assert {mid: message_history(message_id=mid) for mid in KEPT} == before
    assert older.path in purge.pending_dirs and newer.path in purge.pending_dirs


def test_a_compaction_racing_a_purge_does_not_bring_purged_events_back(shore, lived, lake_root):
    # A compaction reads the events commits and writes its generation...
    fold = lake_history_fold(force=True, spark=shore.spark)
    assert ids_in(lake_root, fold.path) == set(lived)
    # ... a purge rewrites those commits and swaps them in meanwhile ...
    purge = shore.purge()
    assert purge.status == PurgeRun.DONE, purge.error

    # ... so the generation, folded from what the purge removed, is not committed.
    assert lake_history_fold_commit(fold) is None
    assert not LakeCommit.objects.filter(dataset="history").exists()
    assert not (lake_root / fold.path).exists()

    # The next compaction folds the lake as the purge left it.
    generation = lake_history_compact_if_due(force=True, spark=shore.spark)
    assert ids_in(lake_root, generation.path) == set(KEPT)
    for mid in PURGED:
        assert message_history(message_id=mid) == []
    assert [message_history(message_id=mid)[-1]["to_state"] for mid in KEPT] == list(KEPT.values())


def test_no_compaction_touches_the_lake_while_a_purge_rewrites_it(shore, lived, lake_root):
    # Folded before the purge began, committed while it holds the lake: dropped, or the purge
    # would fail at its swap (a generation it did not read).
    fold = lake_history_fold(force=True, spark=shore.spark)
    with lake_rewrite_held(holder="purge:test", seconds=600):
        assert lake_history_fold_commit(fold) is None
        assert lake_history_compact_if_due(force=True, spark=shore.spark) is None
        assert lake_state_compact_if_due(force=True, spark=shore.spark) is None
    assert not LakeCommit.objects.filter(dataset__in=["history", "state"]).exists()
    assert not (lake_root / fold.path).exists()

    # Let go, the lake is the compactions' again.
    assert lake_history_compact_if_due(force=True, spark=shore.spark) is not None
    assert lake_state_compact_if_due(force=True, spark=shore.spark) is not None


def test_a_hold_its_purge_died_with_lapses(shore, lived):
    LakeRewrite.objects.create(holder="purge:dead", until=timezone.now() - timedelta(seconds=1))
    assert lake_history_compact_if_due(force=True, spark=shore.spark) is not None


def test_a_purge_holds_the_lake_until_it_has_swapped(shore, lived, monkeypatch):
    import console.retention.execution as execution

    seen = []
    swap = execution.lake_commits_rewrite

    def watching(**kwargs):
        seen.append(list(LakeRewrite.objects.values_list("holder", flat=True)))
        return swap(**kwargs)

    monkeypatch.setattr(execution, "lake_commits_rewrite", watching)
    purge = shore.purge()

    assert purge.status == PurgeRun.DONE, purge.error
    assert seen == [[f"purge:{purge.id}"]]
    assert not LakeRewrite.objects.exists()
