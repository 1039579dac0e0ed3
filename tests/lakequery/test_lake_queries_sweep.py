"""The sweeper: tasks may be lost, queries may not. It hands queued queries that waited over a
minute, and running ones whose heartbeat stopped, to the broker again, at most once a minute
each, and gives up on a query whose worker died MAX_ATTEMPTS times (tests.sweeps)."""

import pytest

from console.audit.models import AuditEntry
from console.lakequery.execution import lake_queries_sweep
from console.lakequery.models import LakeQuery
from tests.sweeps import SweeperTests


class TestTheLakeQueriesSweeper(SweeperTests):
    model = LakeQuery
    sweep = staticmethod(lake_queries_sweep)
    finished_statuses = (LakeQuery.DONE, LakeQuery.FAILED, LakeQuery.CANCELLED)

    @pytest.fixture
    def run_fields(self, personas):
        return {"requester": personas["operator"], "criteria": {"states": ["NDLV"]}}

    def tasks(self):
        from console.lakequery.tasks import lake_queries_sweep_task, lake_query_task

        return lake_query_task, lake_queries_sweep_task

    def assert_given_up_audited(self, run):
        entry = AuditEntry.objects.get()
        assert (entry.action, entry.details["status"]) == ("lake_query.finished", "failed")


def test_the_tasks_are_routed_and_the_sweep_is_scheduled_with_the_lease_sweep(settings):
    from workers.celery import app

    assert app.conf.task_routes["workers.tasks.lake_query_task"]["queue"] == "spark"
    assert "workers.tasks.lake_queries_sweep_task" not in app.conf.task_routes  # default queue
    entry = app.conf.beat_schedule["sweep-lake-queries"]
    assert entry["task"] == "workers.tasks.lake_queries_sweep_task"
    assert entry["schedule"] == app.conf.beat_schedule["sweep-leases"]["schedule"]
    assert entry["schedule"] == float(settings.SWEEP_INTERVAL_SECONDS)
