"""After a purge the read models are what a full refresh makes of the lake without the purged
messages (console.readmodels.deltas.read_models_forget): index rows, failure groups (their
counts, states, first and last seen, and a new sample where the old one was purged), queue
counts and the quarantine inflow. The refresh that follows has nothing to fold, and later ones
go on incrementally from there."""

import pytest

from console.readmodels.models import FailureGroup, QuarantineInflow, QueueStat
from console.retention.models import PurgeRun
from tests.retention.conftest import read_models

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _reason(n):
    # Numbers are masked in a failure's fingerprint: all of these fall in one group per queue,
    # each with its own text.
    return f"order {n} lookup failed"


@pytest.fixture
def busy(shore):
    shore.queue("orders", retention_days=1)
    shore.queue("payments", retention_days=1)
    shore.queue("archive", retention_days=30)
    shore.ingest("orders", {m: m for m in ("n-1", "n-2", "f-1", "e-1", "d-1", "w-1", "ok-1")})
    shore.ingest("payments", {m: m for m in ("p-1", "p-2")})
    shore.ingest("archive", {"a-1": "a-1"})
    # In this order, a second apart: d-1's failure is the latest of the orders group, so its
    # sample; once d-1, e-1 and f-1 are purged, n-1's is.
    shore.live(
        {
            "w-1": "WAIT",
            "n-2": "NDLV",
            "n-1": "NDLV",
            "e-1": "ENDED",
            "f-1": "FAIL",
            "d-1": "DLVD-after-failure",
            "ok-1": "DLVD",
        },
        queue="orders",
        reasons={
            "n-2": _reason(2),
            "n-1": _reason(1),
            "e-1": _reason(5),
            "f-1": _reason(7),
            "d-1": _reason(9),
            "w-1": _reason(3),
        },
    )
    shore.live({"p-1": "DLVD", "p-2": "FAIL"}, queue="payments")
    shore.live({"a-1": "FAIL"}, queue="archive")
    shore.refresh()


def test_after_a_purge_the_read_models_are_what_a_full_refresh_makes_of_them(shore, busy):
    group = FailureGroup.objects.get(queue="orders")
    assert group.sample_message_id == "d-1"  # the latest failure of all
    assert group.sample_reason == _reason(9)
    assert QueueStat.objects.filter(queue="payments").exists()

    purge = shore.purge()

    assert purge.status == PurgeRun.DONE, purge.error
    assert purge.total == 6  # e-1, f-1, d-1, ok-1 on orders; p-1, p-2 on payments
    purged = read_models()
    assert set(purged["index"]) == {"n-1", "n-2", "w-1", "a-1"}
    group = FailureGroup.objects.get(queue="orders")
    assert group.sample_message_id == "n-1"
    assert group.sample_reason == _reason(1)
    assert "LookupError" in group.sample_stack
    assert group.count == 3 and group.states == {"NDLV": 2, "WAIT": 1}
    # Every message of payments went: no counts for it, as after a refresh.
    assert not QueueStat.objects.filter(queue="payments").exists()
    assert not FailureGroup.objects.filter(queue="payments").exists()

    assert shore.refresh() is None  # nothing new to fold
    shore.refresh(full=True)

    assert read_models() == purged


def test_later_refreshes_go_on_incrementally_and_agree_with_a_full_one(shore, busy):
    shore.purge()
    shore.ingest("orders", {"n-3": "n-3"})
    shore.live({"n-3": "NDLV", "w-1": "NDLV"}, queue="orders", reasons={"n-3": _reason(11)})

    run = shore.refresh()

    assert run is not None and not run.full
    incremental = read_models()
    assert incremental["index"]["n-3"]["state"] == "NDLV"
    shore.refresh(full=True)
    assert read_models() == incremental


def test_the_quarantine_inflow_loses_what_the_purged_messages_had_added(shore, busy):
    inflow = QuarantineInflow.objects.filter(flow="quarantined")
    before = sum(inflow.values_list("count", flat=True))

    shore.purge()

    # e-1, f-1 (orders) and p-2 (payments) had entered NDLV once each.
    assert sum(inflow.values_list("count", flat=True)) == before - 3
    assert not inflow.filter(queue="payments").exists()
