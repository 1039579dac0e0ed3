"""A purge after real delivery runs and real decisions: messages delivered by the engine,
returned to their sender (ENDED) by it, failed by an administrator's decision; the purge as the
spark worker's task runs it; and the product carrying on afterwards on the rewritten lake."""

import hashlib
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from console.ingest.services import messages_ingest
from console.readmodels.models import MessageIndex
from console.retention.execution import purge_run
from console.retention.models import PurgeRun
from console.retention.services import purge_create
from console.retention.tasks import purge_task
from tests.decisions.desk import make_desk
from tests.retention.conftest import read_models

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


@pytest.fixture
def decided(desk):
    desk.queue("orders", retention_days=1)
    desk.queue("payments", retention_days=1, on_permanent="return_to_sender")
    delivered = desk.ingest("orders", ["ok", "ok"], prefix="ok")
    quarantined = desk.quarantine("orders", ["permanent"] * 3, prefix="bad")
    ended = desk.ingest(
        "payments", ["permanent"], prefix="pay", sender="shop@example.test", conversation_id="c-9"
    )
    desk.deliver_until_idle()
    desk.refresh()
    request = desk.execute(desk.request({"kind": "selection", "ids": quarantined[:2]}, "fail"))
    assert request.status == "done", request.error
    states = {m: desk.state(m)["state"] for m in [*delivered, *quarantined, *ended]}
    assert states == {
        "ok-0000": "DLVD",
        "ok-0001": "DLVD",
        "bad-0000": "FAIL",
        "bad-0001": "FAIL",
        "bad-0002": "NDLV",
        "pay-0000": "ENDED",
    }
    return desk


def _later(desk, days=10):
    return max(timezone.now(), desk.now) + timedelta(days=days)


def test_the_daily_task_purges_what_became_final_over_a_day_ago(decided):
    # The engine delivered and ended at its own clock, months ago; the decision failed two
    # messages just now.
    assert purge_task() == PurgeRun.DONE

    purge = PurgeRun.objects.get()
    assert (purge.requested_by, purge.dry_run, purge.total) == ("system", False, 3)
    assert purge.counts == {
        "orders": {"count": 2, "sha256": hashlib.sha256(b"ok-0000\nok-0001\n").hexdigest()},
        "payments": {"count": 1, "sha256": hashlib.sha256(b"pay-0000\n").hexdigest()},
    }
    assert decided.state("ok-0000") is None
    assert decided.state("bad-0000")["state"] == "FAIL"

    later = purge_run(now=_later(decided), spark=decided.spark)

    assert later.total == 2
    assert list(MessageIndex.objects.values_list("message_id", flat=True)) == ["bad-0002"]
    models = read_models()
    assert decided.refresh() is None
    decided.refresh(full=True)
    assert read_models() == models


def test_the_product_carries_on_over_the_rewritten_lake(decided):
    purge_run(now=_later(decided), spark=decided.spark)

    # The message left in quarantine is reprocessed and delivered again (and fails again: its
    # body is still "permanent"), its body read from the rewritten directory.
    request = decided.execute(decided.request({"kind": "message", "id": "bad-0002"}))
    assert request.status == "done", request.error
    decided.deliver_until_idle()
    assert [e["to_state"] for e in decided.history("bad-0002")][-3:] == ["TBDL", "DLNG", "NDLV"]
    decided.refresh()
    assert MessageIndex.objects.get(message_id="bad-0002").delivery_count == 1

    # A purged id is forgotten: sent again, it is a new message, not a duplicate.
    result = messages_ingest(
        records=[{"id": "ok-0000", "queue": "orders", "body": "ok"}], source="test"
    )
    assert (result.accepted, result.duplicates) == (1, 0)
    decided.deliver_until_idle()
    assert decided.state("ok-0000")["state"] == "DLVD"


def test_a_purge_asked_for_runs_as_the_spark_workers_task(decided, personas):
    purge = purge_create(actor=personas["admin"], dry_run=True)

    assert purge_task(purge.id) == PurgeRun.DONE
    # A duplicate of the task finds it done and does nothing.
    assert purge_task(purge.id) is None
    purge.refresh_from_db()
    assert (purge.requested_by, purge.total) == ("admin", 3)


def test_the_command_previews_then_purges_and_prints_the_counts_and_hashes(decided, capsys):
    call_command("purge", "--dry-run")
    preview = PurgeRun.objects.get()
    out = capsys.readouterr().out

    assert (preview.dry_run, preview.total) == (True, 3)
    assert preview.requested_by.startswith("cli:")
    assert f"purge {preview.id} " in out and "would purge 3" in out
    assert f"orders: 2  sha256 {preview.counts['orders']['sha256']}" in out
    assert f"ids sha256 {preview.ids_sha256}" in out
    assert decided.state("ok-0000")["state"] == "DLVD"

    call_command("purge", "--queue", "payments")
    out = capsys.readouterr().out

    assert "purged 1" in out
    digest = hashlib.sha256(b"pay-0000\n").hexdigest()
    assert f"payments: 1  sha256 {digest}" in out
    assert decided.state("pay-0000") is None
    assert decided.state("ok-0000")["state"] == "DLVD"


def test_the_command_says_why_it_cannot_purge(decided):
    with pytest.raises(CommandError, match="there is no queue 'nowhere'"):
        call_command("purge", "--queue", "nowhere")
    PurgeRun.objects.create(requested_by="admin")  # queued
    with pytest.raises(CommandError, match="a purge is queued or running"):
        call_command("purge")
