"""A refresh is asked for right after every events commit, unless REFRESH_ON_COMMIT is off."""

import pytest
from django.core.cache import cache

from console.ingest.services import messages_ingest
from console.queues.models import Queue


@pytest.fixture
def orders(db, lake_root):
    cache.clear()
    return Queue.objects.create(name="orders", handler="tests.handlers_for_tests.scripted")


@pytest.fixture
def delays(monkeypatch):
    calls = []
    from console.readmodels.tasks import browse_refresh_task

    monkeypatch.setattr(browse_refresh_task, "delay", lambda *a, **k: calls.append((a, k)))
    return calls


def test_an_ingest_commit_enqueues_one_refresh_once_it_is_committed(
    orders, delays, settings, django_capture_on_commit_callbacks
):
    settings.REFRESH_ON_COMMIT = True
    with django_capture_on_commit_callbacks(execute=True):
        messages_ingest(records=[{"id": "m-1", "queue": "orders", "body": "ok"}], source="test")

    assert delays == [((), {})]


def test_commits_in_a_burst_enqueue_one_refresh_between_them(
    orders, delays, settings, django_capture_on_commit_callbacks
):
    settings.REFRESH_ON_COMMIT = True
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(3):
            messages_ingest(records=[{"id": f"m-{i}", "queue": "orders", "body": "ok"}], source="t")

    assert len(delays) == 1


def test_nothing_is_enqueued_when_refresh_on_commit_is_off(
    orders, delays, settings, django_capture_on_commit_callbacks
):
    settings.REFRESH_ON_COMMIT = False
    with django_capture_on_commit_callbacks(execute=True):
        messages_ingest(records=[{"id": "m-1", "queue": "orders", "body": "ok"}], source="test")

    assert delays == []


def test_the_refresh_task_is_routed_to_the_spark_worker_and_scheduled_by_beat(settings):
    from workers.celery import app

    assert app.conf.task_routes["workers.tasks.browse_refresh_task"]["queue"] == "spark"
    entry = app.conf.beat_schedule["refresh-read-models"]
    assert entry["task"] == "workers.tasks.browse_refresh_task"
    assert entry["schedule"] == float(settings.REFRESH_INTERVAL_SECONDS)
