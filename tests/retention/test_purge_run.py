"""A purge end to end (R15): one message in each state, all old, on a queue that keeps final
messages a day, purged as of ten days later. Only the final ones go, from the lake's files
(bodies included) and from the read models; the others' bodies and histories stay; the purge is
recorded and audited, and the audit trail outlives the messages."""

import hashlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from console.audit.models import AuditEntry
from console.audit.selectors import audit_verify
from console.delivery.selectors import message_history
from console.ingest.models import MessageKey
from console.lake.execution import lake_state_compact_if_due
from console.lake.models import LakeCommit
from console.readmodels.models import FailureGroup, MessageIndex, QueueStat
from console.retention.execution import purge_dirs_delete
from console.retention.models import PurgeRun
from tests.retention.conftest import committed_paths, read_models

pytestmark = [pytest.mark.spark, pytest.mark.slow]

STATES = ["TBDL", "WAIT", "DLNG", "DLVD", "NDLV", "FAIL", "ENDED"]
BODY = "secret body of {}"


def api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def lived(shore, personas):
    shore.queue("orders", retention_days=1)
    ids = {f"m-{s.lower()}": s for s in STATES}
    shore.ingest("orders", {mid: BODY.format(mid) for mid in ids})
    shore.live(ids)
    lake_state_compact_if_due(force=True, spark=shore.spark)
    shore.refresh()
    return ids


def _bodies_in_lake(root):
    """Every body in every Parquet file under the lake's folder, committed or not."""
    found = set()
    for path in Path(root).rglob("*.parquet"):
        if "body" in pq.read_schema(path).names:
            found |= {b.decode() for b in pq.read_table(path, columns=["body"])["body"].to_pylist()}
    return found


def test_only_the_final_messages_are_purged_and_their_bodies_leave_the_lake(
    shore, lived, lake_root, settings, personas
):
    # An operator read the body of the message that will be failed and purged: audited.
    assert api(personas["operator"]).get("/api/v1/messages/m-fail/body").status_code == 200
    viewed = list(AuditEntry.objects.filter(target_id="m-fail").values_list("seq", "hash"))
    assert viewed

    purge = shore.purge()

    assert purge.status == PurgeRun.DONE, purge.error
    assert purge.total == 3
    ids = b"m-dlvd\nm-ended\nm-fail\n"
    assert purge.ids_sha256 == hashlib.sha256(ids).hexdigest()
    assert purge.counts == {"orders": {"count": 3, "sha256": hashlib.sha256(ids).hexdigest()}}
    assert purge.requested_by == "system"

    # The index forgets them; the others are as they were.
    assert set(MessageIndex.objects.values_list("message_id", flat=True)) == {
        "m-tbdl",
        "m-wait",
        "m-dlng",
        "m-ndlv",
    }
    assert QueueStat.objects.get(queue="orders").counts == {
        "TBDL": 1,
        "WAIT": 1,
        "DLNG": 1,
        "NDLV": 1,
    }
    group = FailureGroup.objects.get()
    assert (group.count, group.states) == (2, {"WAIT": 1, "NDLV": 1})
    assert group.sample_message_id in ("m-wait", "m-ndlv")

    # Gone from the lake's current data: every committed file, read directly.
    store_root = Path(settings.LAKE_URI)
    for dataset in ("messages", "events", "state"):
        for relpath in committed_paths(dataset):
            for path in (store_root / relpath).rglob("*.parquet"):
                ids_there = set(
                    pq.read_table(path, columns=["message_id"])["message_id"].to_pylist()
                )
                assert not ids_there & {"m-dlvd", "m-fail", "m-ended"}, (dataset, path)
    # The others keep their bodies and their histories.
    for mid in ("m-tbdl", "m-wait", "m-dlng", "m-ndlv"):
        assert [e["to_state"] for e in message_history(message_id=mid)][-1] == lived[mid]
        assert api(personas["operator"]).get(f"/api/v1/messages/{mid}/body").content == (
            BODY.format(mid).encode()
        )
    for mid in ("m-dlvd", "m-fail", "m-ended"):
        assert message_history(message_id=mid) == []
        assert api(personas["viewer"]).get(f"/api/v1/messages/{mid}").status_code == 404
    assert not MessageKey.objects.filter(message_id__in=["m-dlvd", "m-fail", "m-ended"]).exists()

    # The old directories wait out the grace period, then nothing holds the bodies any more.
    assert purge.pending_dirs
    assert _bodies_in_lake(lake_root) >= {BODY.format("m-fail")}
    settings.PURGE_GRACE_SECONDS = 0
    assert purge_dirs_delete() == len(purge.pending_dirs)
    bodies = _bodies_in_lake(lake_root)
    assert bodies == {BODY.format(m) for m in ("m-tbdl", "m-wait", "m-dlng", "m-ndlv")}

    # The audit trail outlives the messages: what was said of m-fail is still there, intact.
    assert list(AuditEntry.objects.filter(target_id="m-fail").values_list("seq", "hash")) == viewed
    entry = AuditEntry.objects.get(action="retention.purged")
    assert entry.actor == "system"
    assert entry.details["total"] == 3
    assert entry.details["ids_sha256"] == purge.ids_sha256
    assert entry.details["counts"] == purge.counts
    assert audit_verify().ok
    call_command("audit_verify")


def test_every_commit_keeps_its_id_and_the_commits_left_empty_are_retired(shore, lived):
    before = dict(LakeCommit.objects.filter(retired=False).values_list("id", "path"))
    snapshot = LakeCommit.objects.get(dataset="state", retired=False)
    # It holds none of the final messages: left as it is.
    opened = LakeCommit.objects.get(dataset="open", retired=False)

    purge = shore.purge()

    after = dict(LakeCommit.objects.filter(retired=False).values_list("id", "path"))
    # The ingest commits (messages, events) and the lives' events commit all held survivors:
    # each is rewritten in place, keeping its id; the snapshot is replaced by a new one.
    assert set(after) == set(before) - {snapshot.id} | {max(after)}
    new_snapshot = LakeCommit.objects.get(id=max(after))
    assert (new_snapshot.dataset, new_snapshot.covers_upto) == ("state", snapshot.covers_upto)
    assert new_snapshot.row_count == 4
    assert after[opened.id] == before[opened.id]
    assert all(after[i] != before[i] for i in set(before) - {snapshot.id, opened.id})
    assert purge.lake_changes == {
        "events": {"rewritten": 2, "retired": 0},
        "messages": {"rewritten": 1, "retired": 0},
        "state": {"rewritten": 1},
        "history": {"rewritten": 0, "retired": 0},  # no history generation yet
        "open": {"rewritten": 0},  # the final messages were not open when it was folded
    }
    assert sorted(purge.pending_dirs) == sorted(set(before.values()) - {opened.path})


def test_a_commit_whose_messages_are_all_purged_is_retired(shore, lived):
    shore.ingest("orders", {"late-1": "l1", "late-2": "l2"})
    shore.live({"late-1": "DLVD", "late-2": "FAIL"})
    messages = LakeCommit.objects.filter(dataset="messages").order_by("-id").first()

    purge = shore.purge()

    assert purge.total == 5
    messages.refresh_from_db()
    assert messages.retired
    assert purge.lake_changes["messages"] == {"rewritten": 1, "retired": 1}
    assert purge.lake_changes["events"] == {"rewritten": 2, "retired": 2}


def test_a_second_purge_finds_nothing_more(shore, lived):
    shore.purge()
    catalog = list(LakeCommit.objects.order_by("id").values_list("id", "path", "retired"))
    models = read_models()

    again = shore.purge()

    assert (again.status, again.total, again.counts) == (PurgeRun.DONE, 0, {})
    assert again.ids_sha256 == hashlib.sha256(b"").hexdigest()
    assert list(LakeCommit.objects.order_by("id").values_list("id", "path", "retired")) == catalog
    assert read_models() == models


def test_nothing_is_purged_before_its_queue_retention_has_passed(shore, lived):
    purge = shore.purge(days=0)

    assert purge.total == 0
    assert MessageIndex.objects.filter(message_id="m-fail").exists()


def test_a_preview_counts_and_hashes_and_changes_nothing(shore, lived, personas):
    catalog = list(LakeCommit.objects.order_by("id").values_list("id", "path", "retired"))
    models = read_models()

    preview = shore.purge(dry_run=True, actor=personas["admin"])

    assert (preview.status, preview.total) == (PurgeRun.DONE, 3)
    assert preview.ids_sha256 == hashlib.sha256(b"m-dlvd\nm-ended\nm-fail\n").hexdigest()
    assert list(LakeCommit.objects.order_by("id").values_list("id", "path", "retired")) == catalog
    assert read_models() == models
    assert MessageKey.objects.filter(message_id="m-dlvd").exists()
    entry = AuditEntry.objects.get(action="retention.previewed")
    assert entry.actor == "admin"
    assert entry.details["total"] == 3
    assert not AuditEntry.objects.filter(action="retention.purged").exists()


def test_each_queue_keeps_its_own_retention_and_one_queue_may_be_purged_alone(shore, personas):
    shore.queue("orders", retention_days=1)
    shore.queue("archive", retention_days=30)
    shore.ingest("orders", {"o-1": "o1", "o-2": "o2"})
    shore.ingest("archive", {"a-1": "a1"})
    shore.live({"o-1": "DLVD", "o-2": "DLVD"}, queue="orders")
    shore.live({"a-1": "DLVD"}, queue="archive")
    shore.refresh()

    only_archive = shore.purge(queue="archive")
    assert only_archive.total == 0  # 10 days are not 30

    purge = shore.purge(queue="orders", days=40)
    assert purge.total == 2
    assert purge.counts["orders"]["count"] == 2
    assert MessageKey.objects.filter(message_id="a-1").exists()

    everything = shore.purge(days=40)
    assert everything.counts == {
        "archive": {"count": 1, "sha256": hashlib.sha256(b"a-1\n").hexdigest()}
    }


def test_a_message_open_at_the_last_compaction_and_purged_since_is_not_delivered_again(
    shore, lived
):
    from console.delivery.execution import delivery_run

    shore.ingest("orders", {"late": "late body"})
    lake_state_compact_if_due(force=True, spark=shore.spark)
    opened = LakeCommit.objects.get(dataset="open", retired=False)
    # TBDL in the open snapshot; delivered since, with no compaction after.
    shore.live({"late": "DLVD"})

    purge = shore.purge()

    assert purge.total == 4  # DLVD, FAIL, ENDED and late
    assert purge.lake_changes["open"] == {"rewritten": 1}
    rewritten = LakeCommit.objects.get(dataset="open", retired=False)
    assert rewritten.covers_upto == opened.covers_upto
    assert rewritten.row_count == opened.row_count - 1
    # m-tbdl alone: late is gone from the open snapshot as from the rest of the lake.
    assert delivery_run(queues=["orders"], spark=shore.spark).claimed == 1
