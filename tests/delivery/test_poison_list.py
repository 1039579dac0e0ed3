"""The shared poison list's writes (R9): every change in the change log, in the same transaction;
a report and a removal audited; a reprocess taking a message off by id and by body; the feed a
running delivery run follows agreeing with the list. Real database, real lake folder."""

import hashlib
import os
import time
from datetime import timedelta

import pyarrow as pa
import pytest
from django.db import transaction
from django.utils import timezone

from console.audit.models import AuditEntry
from console.delivery.execution import _poison_lists
from console.delivery.models import PoisonChange, PoisonEntry
from console.delivery.poison import (
    poison_cursor,
    poison_entries_put,
    poison_feed_dir,
    poison_feed_sweep,
    poison_remove,
    poison_report,
    poison_reprocessed,
    poison_snapshot,
)
from console.ingest.services import messages_ingest
from console.queues.models import Queue
from console.readmodels.deltas import decided_staged
from workers.engine.poison_feed import PoisonFeed, feed_files

A = "a" * 64
B = "b" * 64


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def changes():
    return list(PoisonChange.objects.values_list("kind", "message_id", "body_sha256", "reason"))


def entries():
    return {
        e.message_id: (e.body_sha256, e.reason, e.source)
        for e in PoisonEntry.objects.order_by("message_id")
    }


def reprocess(ids, *, request_id=1, edited_bodies=()):
    """What a decision's chunk does for a reprocess, in its own transaction."""
    decided = pa.table({"message_id": ids, "to_state": ["TBDL"] * len(ids)})
    with transaction.atomic(), decided_staged(decided) as staged:
        poison_reprocessed(staged=staged, request_id=request_id, edited_bodies=edited_bodies)


@pytest.fixture
def ingested(db, lake_root):
    """m1, m2 and m3 sent in with the same body, m4 with another."""
    Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")
    records = [{"id": f"m{i}", "queue": "orders", "body": "crash"} for i in (1, 2, 3)]
    records.append({"id": "m4", "queue": "orders", "body": "other"})
    assert not messages_ingest(records=records, source="test").errors


def test_putting_entries_logs_each_addition(db, lake_root):
    put = poison_entries_put(
        entries=[("m1", "orders", "crashed", A), ("m2", "orders", "permanent", "")],
        source="engine",
    )

    assert put == 2
    assert entries() == {"m1": (A, "crashed", "engine"), "m2": ("", "permanent", "engine")}
    assert changes() == [("added", "m1", A, "crashed"), ("added", "m2", "", "permanent")]


def test_putting_an_entry_again_unchanged_logs_nothing(db, lake_root):
    poison_entries_put(entries=[("m1", "orders", "crashed", A)], source="engine")

    assert poison_entries_put(entries=[("m1", "orders", "crashed", A)], source="engine") == 0
    assert len(changes()) == 1


def test_a_replaced_entry_clears_its_old_body_first_and_keeps_a_hash_the_new_one_lacks(
    db, lake_root
):
    poison_entries_put(entries=[("m1", "orders", "crashed", A)], source="engine")

    poison_entries_put(entries=[("m1", "orders", "crashed again", "")], source="billing")

    assert entries() == {"m1": (A, "crashed again", "billing")}
    assert changes()[1:] == [
        ("body_cleared", "m1", A, "replaced by a newer entry"),
        ("added", "m1", A, "crashed again"),
    ]


def test_of_two_entries_for_one_id_in_a_batch_the_last_wins(db, lake_root):
    poison_entries_put(
        entries=[("m1", "orders", "first", A), ("m1", "orders", "second", B)], source="engine"
    )

    assert entries() == {"m1": (B, "second", "engine")}


def test_a_report_is_listed_under_its_reporter_and_audited(db, lake_root, personas):
    entry, created = poison_report(
        actor=personas["application"],
        message_id="ext-1",
        reason="crashed the billing app",
        queue="billing",
        body_sha256=A,
    )

    assert created is True
    assert (entry.source, entry.queue, entry.body_sha256) == ("application", "billing", A)
    audit = AuditEntry.objects.get(action="poison.reported")
    assert (audit.actor, audit.target_type, audit.target_id) == ("application", "message", "ext-1")
    assert audit.details == {
        "message_id": "ext-1",
        "body_sha256": A,
        "queue": "billing",
        "reason": "crashed the billing app",
        "created": True,
    }


def test_a_removal_takes_one_entry_off_and_leaves_its_body_to_the_others(db, lake_root, personas):
    poison_entries_put(
        entries=[("m1", "orders", "crashed", A), ("m2", "orders", "same body", A)],
        source="engine",
    )

    removed = poison_remove(actor=personas["admin"], message_id="m1")

    assert removed.message_id == "m1"
    assert entries() == {"m2": (A, "same body", "engine")}
    assert changes()[-1] == ("removed", "m1", A, "removed by admin")
    audit = AuditEntry.objects.get(action="poison.removed")
    assert (audit.actor, audit.target_id, audit.details["reason"]) == ("admin", "m1", "crashed")
    assert poison_remove(actor=personas["admin"], message_id="m1") is None
    assert AuditEntry.objects.filter(action="poison.removed").count() == 1


def test_a_reprocess_takes_its_messages_off_by_id_and_clears_their_bodies_on_the_others(
    ingested,
):
    poison_entries_put(
        entries=[
            ("m1", "orders", "crashed", sha("crash")),
            ("m2", "orders", "on the poison list: same body", sha("crash")),
            ("m4", "orders", "permanent", sha("other")),
        ],
        source="engine",
    )
    before = poison_cursor()

    reprocess(["m1"], request_id=7)

    assert entries() == {
        "m2": ("", "on the poison list: same body", "engine"),
        "m4": (sha("other"), "permanent", "engine"),
    }
    assert sorted(PoisonChange.objects.filter(id__gt=before).values_list("kind", "message_id")) == [
        ("body_cleared", "m2"),
        ("removed", "m1"),
    ]
    removed = PoisonChange.objects.get(kind="removed")
    assert (removed.source, removed.reason) == ("request 7", "reprocessed (request 7)")


def test_a_reprocess_clears_the_body_the_product_received_even_if_the_entry_has_no_hash(
    ingested, personas
):
    # Reported from outside without a hash; the engine listed m2 by its body.
    poison_report(actor=personas["application"], message_id="m1", reason="billing crashed")
    poison_entries_put(entries=[("m2", "orders", "same body", sha("crash"))], source="engine")

    reprocess(["m1"])

    assert entries() == {"m2": ("", "same body", "engine")}


def test_a_reprocess_with_an_edited_body_clears_the_edited_body_too(ingested):
    poison_entries_put(
        entries=[("m1", "orders", "crashed", sha("crash")), ("m4", "orders", "x", sha("other"))],
        source="engine",
    )

    reprocess(["m1"], edited_bodies=[sha("other")])

    assert entries() == {"m4": ("", "x", "engine")}


def test_the_snapshot_counts_the_entries_of_each_body_and_the_run_gets_each_body_once(
    db, lake_root
):
    poison_entries_put(
        entries=[("m1", "orders", "one", A), ("m2", "orders", "two", A), ("m3", "", "three", "")],
        source="engine",
    )

    snapshot = poison_snapshot()

    assert snapshot.cursor == PoisonChange.objects.latest("id").id
    assert sorted(snapshot.ids) == [("m1", "one"), ("m2", "two"), ("m3", "three")]
    assert snapshot.hashes == [(A, "two", 2)]
    assert _poison_lists()[1] == [(A, "two")]


def test_a_small_run_that_matches_no_body_reads_only_its_messages_entries(db, lake_root):
    poison_entries_put(
        entries=[("m1", "orders", "one", A), ("m2", "orders", "two", A), ("m3", "", "three", "")],
        source="engine",
    )

    snapshot = poison_snapshot(message_ids=["m3", "m1", "m9"])

    assert snapshot.cursor == poison_snapshot().cursor
    assert snapshot.ids == [("m1", "one"), ("m3", "three")]
    assert snapshot.hashes == []


@pytest.mark.django_db(transaction=True)
def test_a_feed_started_from_a_snapshot_follows_every_kind_of_change_to_the_list(
    lake_root, personas
):
    Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")
    records = [{"id": f"m{i}", "queue": "orders", "body": "crash"} for i in (1, 2, 3)]
    assert not messages_ingest(records=records, source="test").errors
    with transaction.atomic():
        poison_entries_put(
            entries=[("m1", "orders", "crashed", sha("crash")), ("x", "", "x", A)],
            source="engine",
        )
    start = poison_snapshot()
    feed = PoisonFeed(poison_feed_dir(), start.cursor, start.ids, start.hashes)

    with transaction.atomic():
        poison_entries_put(
            entries=[("m2", "orders", "same body", sha("crash")), ("m3", "orders", "r", "")],
            source="engine",
        )
    poison_report(actor=personas["application"], message_id="ext", reason="r", body_sha256=B)
    poison_report(actor=personas["application"], message_id="x", reason="again", body_sha256=B)
    poison_remove(actor=personas["admin"], message_id="ext")
    reprocess(["m1"])
    feed.refresh()

    end = poison_snapshot()
    assert feed.cursor == end.cursor
    for message_id in ["m1", "m2", "m3", "x", "ext", "nobody"]:
        assert feed.reason(message_id, by_body=False) == dict(end.ids).get(message_id), message_id
    for body in [sha("crash"), A, B]:
        listed = {h: r for h, r, _ in end.hashes}.get(body)
        found = feed.reason("nobody", body, by_body=True)
        assert (found is None) == (listed is None), body
    assert feed.reason("nobody", B, by_body=True) == "same body as a poisoned message: again"


@pytest.mark.django_db(transaction=True)
def test_each_committed_write_is_one_feed_file_and_a_rolled_back_one_none(lake_root, personas):
    poison_report(actor=personas["application"], message_id="e1", reason="r")
    poison_report(actor=personas["application"], message_id="e2", reason="r", body_sha256=A)
    with pytest.raises(RuntimeError), transaction.atomic():
        poison_report(actor=personas["application"], message_id="e3", reason="r")
        raise RuntimeError("the caller's transaction fails")
    poison_remove(actor=personas["admin"], message_id="e1")

    first, second, removal = PoisonChange.objects.values_list("id", flat=True)
    files = [(after, upto) for after, upto, _ in feed_files(poison_feed_dir())]
    # Each file starts where the one before ends, whatever cursor the rolled-back report took.
    assert files == [(0, first), (first, second), (second, removal)]
    assert not PoisonEntry.objects.filter(message_id="e3").exists()


@pytest.mark.django_db(transaction=True)
def test_the_sweep_deletes_day_old_files_and_writes_a_lost_one_again(lake_root, personas):
    for i in range(3):
        poison_report(actor=personas["application"], message_id=f"e{i}", reason="r")
    c0, c1, c2 = PoisonChange.objects.values_list("id", flat=True)
    directory = poison_feed_dir()
    (_, _, old_name), (_, _, lost_name), _ = feed_files(directory)
    day_ago = time.time() - 2 * 86400
    os.utime(os.path.join(directory, old_name), (day_ago, day_ago))
    PoisonChange.objects.filter(id=c0).update(at=timezone.now() - timedelta(days=2))
    os.remove(os.path.join(directory, lost_name))

    deleted, written = poison_feed_sweep()

    assert (deleted, written) == (1, 1)
    assert [(a, u) for a, u, _ in feed_files(directory)] == [(c0, c1), (c1, c2)]
    feed = PoisonFeed(directory, c0)
    assert feed.refresh() == 2
    assert feed.reason("e1", by_body=False) == "r"
    assert poison_feed_sweep() == (0, 0)
