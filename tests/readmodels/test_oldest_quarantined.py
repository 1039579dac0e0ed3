"""Each queue's oldest quarantined message is found by the refresh's task, not where it is read
(console.readmodels.oldest): again for every queue whose counts moved since, and only for those;
a move meanwhile leaves it to the next pass, never kept with counts it was not found for."""

from datetime import timedelta

import pytest
from django.utils import timezone

from console.readmodels.counts import queue_counts_move
from console.readmodels.models import MessageState, QueueStat
from console.readmodels.oldest import quarantine_oldest_keep
from tests.browse.conftest import Index
from tests.readmodels.oldest_scenes import quarantined_behind_an_older_message

pytestmark = pytest.mark.django_db


@pytest.fixture
def index(lake_root):
    return Index()


def _oldest(queue):
    return QueueStat.objects.get(queue=queue).oldest_quarantined_at


def test_it_is_the_oldest_quarantined_not_an_older_message_of_another_state(index):
    now = timezone.now()
    quarantined_behind_an_older_message(index, now, state="FAIL", older=timedelta(days=30))
    index.stats("idle", DLVD=4)

    assert sorted(quarantine_oldest_keep()) == ["idle", "orders"]

    assert _oldest("orders") == now - timedelta(hours=5)
    assert _oldest("idle") is None


def test_only_queues_whose_counts_moved_are_looked_at_again(index):
    now = timezone.now()
    index.stats("orders", NDLV=1)
    index.stats("refunds", NDLV=1)
    index.row("o1", last_failure_at=now - timedelta(hours=5))
    index.row("r1", queue="refunds", last_failure_at=now - timedelta(hours=2))
    quarantine_oldest_keep()
    assert quarantine_oldest_keep() == []

    # A decision fails the oldest of orders: its counts move, as a decision's chunk moves them.
    MessageState.objects.filter(message_id="o1").update(state="FAIL")
    queue_counts_move({("orders", "NDLV"): -1, ("orders", "FAIL"): 1})

    assert quarantine_oldest_keep() == ["orders"]
    assert _oldest("orders") is None
    assert _oldest("refunds") == now - timedelta(hours=2)


def test_counts_that_move_meanwhile_leave_it_for_the_next_pass(index, monkeypatch):
    from console.readmodels import oldest

    now = timezone.now()
    index.stats("orders", NDLV=1)
    index.row("o1", last_failure_at=now - timedelta(hours=5))
    found = oldest.quarantine_oldest_find

    def find_while_a_decision_moves_the_counts(queue):
        at = found(queue)
        QueueStat.objects.filter(queue=queue).update(updated_at=timezone.now())
        return at

    monkeypatch.setattr(oldest, "quarantine_oldest_find", find_while_a_decision_moves_the_counts)
    oldest.quarantine_oldest_keep()
    assert QueueStat.objects.get(queue="orders").oldest_checked_at is None  # not kept

    monkeypatch.setattr(oldest, "quarantine_oldest_find", found)
    assert oldest.quarantine_oldest_keep() == ["orders"]
    assert _oldest("orders") == now - timedelta(hours=5)


def test_the_refresh_task_keeps_it_on_every_tick_even_with_nothing_to_refresh(index, monkeypatch):
    from console.readmodels import tasks

    now = timezone.now()
    index.stats("orders", NDLV=1)
    index.row("o1", last_failure_at=now - timedelta(hours=3))
    # A tick with no lake commit to fold: the refresh answers None (a decision moved the counts).
    monkeypatch.setattr(tasks, "read_models_refresh", lambda full=False: None)

    assert tasks.browse_refresh_task() is None

    assert _oldest("orders") == now - timedelta(hours=3)


def test_a_move_stamped_by_a_host_whose_clock_is_behind_is_not_missed(index):
    now = timezone.now()
    index.stats("orders", NDLV=1)
    index.row("o1", last_failure_at=now - timedelta(hours=5))
    quarantine_oldest_keep()
    checked = QueueStat.objects.get(queue="orders").oldest_checked_at

    # Another worker, its clock a minute behind, fails the message and moves the counts.
    MessageState.objects.filter(message_id="o1").update(state="FAIL")
    QueueStat.objects.filter(queue="orders").update(
        counts={"FAIL": 1}, updated_at=checked - timedelta(minutes=1)
    )

    assert quarantine_oldest_keep() == ["orders"]
    assert _oldest("orders") is None
