"""The sweeper: tasks may be lost, queries may not. It hands queued queries that waited over a
minute, and running ones whose heartbeat stopped, to the broker again, at most once a minute
each, and gives up on a query whose worker died MAX_ATTEMPTS times."""

from datetime import timedelta

import pytest
from django.utils import timezone

from console.audit.models import AuditEntry
from console.lakequery.execution import lake_queries_sweep
from console.lakequery.models import LakeQuery
from console.leases import MAX_ATTEMPTS
from tests.leased_runs import leased_run


@pytest.fixture
def delays():
    """What the sweeper hands to the broker, in order."""
    return []


@pytest.fixture
def now():
    return timezone.now()


@pytest.fixture
def make(personas, now):
    def make(status=LakeQuery.QUEUED, *, enqueued=0, heartbeat=None, attempts=0):
        """A query last handed to the broker `enqueued` seconds ago, its heartbeat `heartbeat`
        seconds ago."""
        return leased_run(
            LakeQuery,
            now=now,
            status=status,
            enqueued=enqueued,
            heartbeat=heartbeat,
            attempts=attempts,
            requester=personas["operator"],
            criteria={"states": ["NDLV"]},
        )

    return make


def test_a_query_queued_over_a_minute_ago_is_handed_over_again(make, delays, now):
    lost = make(enqueued=61)
    make(enqueued=30)  # its task may still be on its way

    assert lake_queries_sweep(enqueue=delays.append, now=now) == [lost.id]
    assert delays == [lost.id]
    assert LakeQuery.objects.get(id=lost.id).enqueued_at == now


def test_a_running_query_whose_heartbeat_stopped_is_handed_over_again(make, delays, now, settings):
    beat = 3 * settings.HEARTBEAT_SECONDS
    dead = make(LakeQuery.RUNNING, enqueued=600, heartbeat=beat + 1, attempts=1)
    make(LakeQuery.RUNNING, enqueued=600, heartbeat=beat - 1, attempts=1)

    assert lake_queries_sweep(enqueue=delays.append, now=now) == [dead.id]
    assert delays == [dead.id]


def test_a_query_is_handed_over_at_most_once_a_minute(make, delays, now):
    lost = make(enqueued=61)
    lake_queries_sweep(enqueue=delays.append, now=now)

    assert lake_queries_sweep(enqueue=delays.append, now=now + timedelta(seconds=59)) == []
    assert lake_queries_sweep(enqueue=delays.append, now=now + timedelta(seconds=61)) == [lost.id]
    assert delays == [lost.id, lost.id]


@pytest.mark.parametrize("status", [LakeQuery.DONE, LakeQuery.FAILED, LakeQuery.CANCELLED])
def test_finished_queries_are_left_alone(make, delays, now, status):
    make(status, enqueued=3600, heartbeat=3600)

    assert lake_queries_sweep(enqueue=delays.append, now=now) == []
    assert delays == []


def test_a_query_whose_worker_died_each_time_is_given_up(make, delays, now, settings):
    doomed = make(
        LakeQuery.RUNNING,
        enqueued=600,
        heartbeat=3 * settings.HEARTBEAT_SECONDS + 1,
        attempts=MAX_ATTEMPTS,
    )

    assert lake_queries_sweep(enqueue=delays.append, now=now) == []
    doomed.refresh_from_db()
    assert doomed.status == LakeQuery.FAILED
    assert doomed.error.startswith(
        f"given up after {MAX_ATTEMPTS} attempts: the worker running it stopped each time"
    )
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.details["status"]) == ("lake_query.finished", "failed")


def test_a_broker_that_is_down_leaves_the_query_for_the_next_sweep(make, now):
    def down(query_id):
        raise ConnectionError("broker unreachable")

    lost = make(enqueued=61)

    assert lake_queries_sweep(enqueue=down, now=now) == []
    assert LakeQuery.objects.get(id=lost.id).status == LakeQuery.QUEUED


def test_the_tasks_are_routed_and_the_sweep_is_scheduled_with_the_lease_sweep(settings):
    from workers.celery import app

    assert app.conf.task_routes["workers.tasks.lake_query_task"]["queue"] == "spark"
    assert "workers.tasks.lake_queries_sweep_task" not in app.conf.task_routes  # default queue
    entry = app.conf.beat_schedule["sweep-lake-queries"]
    assert entry["task"] == "workers.tasks.lake_queries_sweep_task"
    assert entry["schedule"] == app.conf.beat_schedule["sweep-leases"]["schedule"]
    assert entry["schedule"] == float(settings.SWEEP_INTERVAL_SECONDS)


def test_the_sweep_task_hands_lost_queries_to_the_spark_workers_task(make, monkeypatch):
    from console.lakequery.tasks import lake_queries_sweep_task, lake_query_task

    sent = []
    monkeypatch.setattr(lake_query_task, "delay", lambda query_id: sent.append(query_id))
    lost = make(enqueued=61)

    assert lake_queries_sweep_task() == 1
    assert sent == [lost.id]
