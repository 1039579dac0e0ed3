"""No lost wake-up: an ingest hands its queue to a run at once, wherever in the life of the
queue's run it lands (the run has read the lake, holds the queue, has just let go), and a burst of
ingests queues one run task, not one each.

The test plays the spark worker: the run tasks the product publishes to the broker are heard as
they are sent (Celery's before_task_publish) and carried out in order when the test says so, so
each interleaving is exact. Beat's dispatch is never called: a message the tasks leave behind
would be waiting for its next tick."""

from datetime import timedelta

import pytest
from celery.signals import before_task_publish
from django.core.cache import cache
from django.utils import timezone

from console.delivery import execution
from console.delivery.models import DeliveryHandover
from console.delivery.selectors import message_history
from console.delivery.tasks import delivery_run_task
from console.ingest.services import messages_ingest
from console.queues.models import Queue

RUN_TASK = "workers.tasks.delivery_run_task"


class SparkWorker:
    """The delivery run tasks published while it listens, carried out one after the other."""

    def __init__(self):
        self.published = []

    def heard(self, sender=None, body=None, **kwargs):
        if sender == RUN_TASK:
            _, task_kwargs, _ = body
            self.published.append(task_kwargs)

    def work(self):
        """Carry out every published task, those they publish included; the runs' ids (None for
        a task that found its queue held)."""
        runs = []
        while self.published:
            runs.append(delivery_run_task(**self.published.pop(0)))
        return runs


@pytest.fixture
def worker(transactional_db, lake_root, settings):
    cache.clear()
    settings.REFRESH_ON_COMMIT = False
    # No compaction after a run: a Spark job adds nothing to what is checked here.
    settings.COMPACT_AFTER_COMMITS = 1000
    settings.HISTORY_COMPACT_AFTER_COMMITS = 1000
    Queue.objects.create(name="orders", handler="tests.handlers_for_tests.always_ok")
    spark_worker = SparkWorker()
    before_task_publish.connect(spark_worker.heard, weak=False)
    yield spark_worker
    before_task_publish.disconnect(spark_worker.heard)


def _ingest(*message_ids):
    records = [{"id": m, "queue": "orders", "body": "{}"} for m in message_ids]
    result = messages_ingest(records=records, source="test")
    assert result.accepted == len(message_ids), result.errors


def _taken_by(message_id):
    """The ids of the runs that took the message (its DLNG events)."""
    history = message_history(message_id=message_id)
    return [int(e["run_id"]) for e in history if e["to_state"] == "DLNG"]


def _after_its_read(monkeypatch, then):
    """`then()` once, as the first run to read the lake has read it (before it takes its queue)."""
    read = execution.lake_due_inputs
    done = []

    def reading(**kwargs):
        inputs = read(**kwargs)
        if not done:
            done.append(then())
        return inputs

    monkeypatch.setattr(execution, "lake_due_inputs", reading)


def _while_it_holds_the_queue(monkeypatch, then):
    """`then()` once, as the first run to commit has delivered and still holds its queue."""
    commit = execution._run_commit
    done = []

    def committing(run, result, paths):
        if not done:
            done.append(then())
        return commit(run, result, paths)

    monkeypatch.setattr(execution, "_run_commit", committing)


@pytest.mark.parametrize("moment", ["after its read", "while it holds the queue", "after it ends"])
def test_a_message_ingested_at_any_point_of_a_runs_life_is_taken_by_a_run_started_at_once(
    worker, monkeypatch, moment
):
    _ingest("o-1")
    assert len(worker.published) == 1  # the first ingest's wake
    second = lambda: _ingest("o-2")  # noqa: E731 - one ingest, handed to the hooks
    if moment == "after its read":
        # The run read the lake before o-2 committed, and its queue is still free: the wake
        # hands the queue over again, since the run it was handed to has started.
        _after_its_read(monkeypatch, second)
    elif moment == "while it holds the queue":
        # o-2's wake marks the run's lock wanted: it starts the next run as it lets go.
        _while_it_holds_the_queue(monkeypatch, second)

    first = delivery_run_task(**worker.published.pop(0))
    if moment == "after it ends":
        second()
    runs = worker.work()

    assert _taken_by("o-1") == [first]
    # o-2 was taken by a run its ingest started (or asked the holder for), not beat's next one;
    # and one such run, no stampede.
    assert [r for r in runs if r is not None] == _taken_by("o-2")
    assert len(_taken_by("o-2")) == 1 and _taken_by("o-2") != [first]


def test_a_burst_of_ingests_before_the_run_starts_queues_one_run_task(worker):
    for i in range(5):
        _ingest(f"o-{i}")

    assert len(worker.published) == 1
    (run,) = worker.work()
    assert {_taken_by(f"o-{i}")[0] for i in range(5)} == {run}
    assert not DeliveryHandover.objects.exists()


def test_a_hand_over_whose_task_was_lost_no_longer_holds_ingests_back(worker, settings):
    stale = timezone.now() - timedelta(seconds=settings.DELIVERY_INTERVAL_SECONDS + 1)
    DeliveryHandover.objects.create(queue="orders", at=stale)

    _ingest("o-1")

    assert len(worker.published) == 1
    (run,) = worker.work()
    assert _taken_by("o-1") == [run]
