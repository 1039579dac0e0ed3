"""Counts that can be checked and repaired: `counts_verify` recounts from the lake what the
console shows (queues by state, failure groups, hourly flows, the index) and compares; drift is
found, reported, repaired when asked, and the repair is audited. Real ingest, delivery runs and
decisions on the real Spark session."""

import logging
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction

from console.alerts.models import Alert
from console.audit.models import AuditEntry
from console.readmodels.counts import queue_counts_move
from console.readmodels.models import (
    CountsCheck,
    FailureGroup,
    MessageState,
    QuarantineInflow,
    QueueStat,
)
from console.readmodels.verify import counts_verify
from tests.decisions.desk import make_desk
from tests.delivery.conftest import T0

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    settings.REFRESH_ON_COMMIT = False
    return make_desk(spark, personas, settings)


def verify(desk, **kwargs):
    return counts_verify(spark=desk.spark, **kwargs)


def a_working_lake(desk):
    """Delivered, waiting and quarantined messages in two queues, indexed."""
    desk.queue("orders")
    desk.queue("invoices")
    quarantined = desk.quarantine("orders", ["permanent"] * 3)
    desk.ingest("orders", {"fine-1": "ok", "fine-2": "ok"})
    desk.ingest("invoices", {"slow-1": "transient", "inv-1": "ok"})
    desk.deliver(at=T0 + timedelta(hours=1))
    desk.refresh()
    return quarantined


def counts():
    return {s.queue: s.counts for s in QueueStat.objects.all()}


def test_counts_that_agree_with_the_lake_are_reported_clean(desk):
    a_working_lake(desk)

    check = verify(desk)

    assert check.status == CountsCheck.CLEAN
    assert check.differences == 0
    assert check.messages == 7
    assert check.finished_at is not None


def test_a_decision_and_the_refresh_after_it_leave_counts_and_flows_that_agree_with_the_lake(desk):
    # A decision moves states and counts in its own commit's transaction; its flows out of
    # quarantine are counted by the refresh that takes its commit in, once.
    ids = a_working_lake(desk)
    desk.execute(desk.request({"kind": "selection", "ids": ids[:2]}))
    desk.refresh()
    desk.refresh()

    check = verify(desk)

    assert (check.status, check.drift) == (CountsCheck.CLEAN, [])
    released = QuarantineInflow.objects.filter(flow="released").values_list("count", flat=True)
    assert sum(released) == 2


def test_the_refresh_after_a_decision_counts_its_flows_without_folding_anything(desk, monkeypatch):
    # The decision moved states and counts itself: the refresh that takes its commit in counts
    # its flows out of quarantine, and does not run an empty fold over every message's metadata
    # (45 s of Spark after a bulk decision of 100k in bench decisions, for nothing).
    import workers.jobs.refresh

    ids = a_working_lake(desk)
    before = counts()
    desk.execute(desk.request({"kind": "selection", "ids": ids[:2]}))
    after_decision = counts()

    def no_fold(*args, **kwargs):
        raise AssertionError("a refresh with nothing to fold folded")

    monkeypatch.setattr(workers.jobs.refresh, "index_rows", no_fold)
    run = desk.refresh()

    assert run is not None and run.changed == 0
    assert desk.refresh() is None  # its commit is taken in
    released = QuarantineInflow.objects.filter(flow="released").values_list("count", flat=True)
    assert sum(released) == 2
    assert counts() == after_decision != before
    monkeypatch.undo()
    check = verify(desk)
    assert (check.status, check.drift) == (CountsCheck.CLEAN, [])


def test_a_decision_handed_back_to_the_refresh_is_folded_before_the_count_not_taken_for_drift(
    desk,
):
    # A refresh that loads rows computed before a decision committed hands the decision's
    # commit back (views_applied off): the read models hold its changes, the next refresh
    # folds it again. Counted before that, it looked like drift (found by the soak).
    from console.lake.models import LakeCommit

    ids = a_working_lake(desk)
    desk.execute(desk.request({"kind": "selection", "ids": ids[:2]}))
    LakeCommit.objects.filter(dataset="events", views_applied=True).update(
        views_applied=False, handed_back=True
    )

    check = verify(desk)

    assert (check.status, check.drift) == (CountsCheck.CLEAN, [])
    assert {desk.index_state(i) for i in ids[:2]} == {"TBDL"}


def test_events_committed_after_the_last_refresh_are_not_taken_for_drift(desk):
    a_working_lake(desk)
    desk.ingest("orders", {"late-1": "ok", "late-2": "permanent"})
    desk.deliver(at=T0 + timedelta(hours=2))

    check = verify(desk)

    assert (check.status, check.drift) == (CountsCheck.CLEAN, [])


def drift_injected():
    """One wrong number in each kind of count the console shows."""
    stat = QueueStat.objects.get(queue="orders")
    stat.counts = {**stat.counts, "DLVD": stat.counts["DLVD"] + 3}
    stat.save()
    group = FailureGroup.objects.get(queue="orders")
    FailureGroup.objects.filter(pk=group.pk).update(states={"NDLV": 1}, count=1, ndlv=1)
    flow = QuarantineInflow.objects.filter(flow="delivered").first()
    QuarantineInflow.objects.filter(pk=flow.pk).update(count=flow.count + 5)
    wrong = MessageState.objects.filter(state="NDLV").order_by("message_id").first()
    MessageState.objects.filter(pk=wrong.pk).update(state="FAIL")
    return group.fingerprint, wrong.message_id


def test_drift_in_each_kind_of_count_is_found_and_left_as_it_is_without_a_repair(desk):
    a_working_lake(desk)
    fingerprint, wrong = drift_injected()
    before = counts()

    check = verify(desk)

    assert check.status == CountsCheck.DRIFT
    found = {(d["what"], d["key"]) for d in check.drift}
    assert ("queue", "orders") in found
    assert ("group", fingerprint) in found
    assert ("index", wrong) in found
    assert any(what == "flow" and key.endswith(" delivered") for what, key in found)
    queue = next(d for d in check.drift if d["what"] == "queue")
    assert queue["shown"]["DLVD"] == queue["recounted"]["DLVD"] + 3
    assert check.differences == len(check.drift) == 4
    assert counts() == before
    assert MessageState.objects.get(pk=wrong).state == "FAIL"
    alert = Alert.objects.get(kind="counts.drift")
    assert "4 count(s) that differ" in alert.text
    assert not AuditEntry.objects.filter(action="counts.repaired").exists()


def test_a_repair_loads_the_recount_is_audited_and_the_next_check_is_clean(desk):
    a_working_lake(desk)
    clean = (
        counts(),
        list(FailureGroup.objects.order_by("fingerprint").values("fingerprint", "states", "count")),
    )
    drift_injected()

    check = verify(desk, repair=True, actor=desk.personas["admin"])

    assert (check.status, check.differences) == (CountsCheck.REPAIRED, 4)
    assert (
        counts(),
        list(FailureGroup.objects.order_by("fingerprint").values("fingerprint", "states", "count")),
    ) == clean
    entry = AuditEntry.objects.get(action="counts.repaired")
    assert entry.actor == "admin"
    assert entry.details["differences"] == 4
    assert verify(desk).status == CountsCheck.CLEAN


def test_the_command_exits_non_zero_on_drift_and_a_repair_sets_it_right(desk, capsys):
    a_working_lake(desk)
    drift_injected()

    with pytest.raises(CommandError) as failed:
        call_command("counts_verify")

    assert failed.value.returncode == 1
    out = capsys.readouterr().out
    assert "4 count(s) differ:" in out
    assert "queue" in out and "orders" in out
    call_command("counts_verify", "--repair")
    assert "repaired" in capsys.readouterr().out
    call_command("counts_verify", "--json")
    assert '"status": "clean"' in capsys.readouterr().out


def test_a_move_that_takes_a_count_below_zero_keeps_it_logs_an_error_and_alerts(db, caplog):
    QueueStat.objects.create(queue="orders", counts={"NDLV": 1}, updated_at=T0)

    with caplog.at_level(logging.ERROR), transaction.atomic():
        queue_counts_move({("orders", "NDLV"): -3, ("orders", "TBDL"): 3})

    assert QueueStat.objects.get(queue="orders").counts == {"NDLV": -2, "TBDL": 3}
    assert "went below zero" in caplog.text
    alert = Alert.objects.get(kind="counts.drift")
    assert "queue orders" in alert.text


def test_the_check_is_routed_to_the_spark_worker_and_scheduled_daily_by_beat(settings):
    from workers.celery import app

    assert app.conf.task_routes["workers.tasks.counts_verify_task"]["queue"] == "spark"
    entry = app.conf.beat_schedule["counts-verify"]
    assert entry["task"] == "workers.tasks.counts_verify_task"
    assert entry["schedule"] == float(settings.COUNTS_VERIFY_SECONDS) == 86400.0


def test_the_scheduled_check_repairs_unless_told_not_to(desk, settings):
    from console.readmodels.tasks import counts_verify_task

    a_working_lake(desk)
    drift_injected()
    settings.COUNTS_VERIFY_REPAIR = False
    first = CountsCheck.objects.get(id=counts_verify_task())
    settings.COUNTS_VERIFY_REPAIR = True
    second = CountsCheck.objects.get(id=counts_verify_task())

    assert (first.status, first.actor, first.repair) == (CountsCheck.DRIFT, "system", False)
    assert (second.status, second.repair) == (CountsCheck.REPAIRED, True)
