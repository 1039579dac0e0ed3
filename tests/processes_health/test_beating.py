"""A process's own heartbeat: its row made at once, beaten with what it works on, marked stopped
on a clean stop; old rows forgotten; a task said in a few words."""

import os
import socket
from datetime import timedelta

import pytest
from celery.signals import task_postrun, task_prerun

from console.processes.beating import beating_start, beating_stop, work_ended, work_started
from console.processes.models import ProcessBeat
from console.processes.receivers import work_text
from console.processes.services import process_beats_prune
from tests.processes.conftest import wait_for


@pytest.fixture
def beating(transactional_db, settings):
    """This test's process beating as a default worker, every second."""
    settings.HEARTBEAT_SECONDS = 1
    heartbeat = beating_start("worker")
    yield heartbeat
    beating_stop()


def test_the_row_is_there_at_once_and_beaten_with_the_current_work(beating):
    row = ProcessBeat.objects.get(kind="worker", pid=os.getpid())
    assert row.host == socket.gethostname() and row.stopped_at is None and row.current == ""
    assert beating_start("worker") is beating  # one per process

    work_started("task-1", "delivery run orders")
    work_started("task-2", "lake query 7")
    wait_for(
        lambda: ProcessBeat.objects.get(pk=row.pk).current == "delivery run orders; lake query 7",
        timeout=5,
        what="the work at a beat",
    )
    work_ended("task-1")
    wait_for(
        lambda: ProcessBeat.objects.get(pk=row.pk).current == "lake query 7",
        timeout=5,
        what="the work ended at a beat",
    )
    assert ProcessBeat.objects.get(pk=row.pk).beat_at > row.beat_at


def test_a_worker_shows_the_task_it_runs_from_celery_signals(beating):
    from console.decisions.tasks import action_request_execute_task

    # What Celery's tracer sends around each task a worker runs.
    task_prerun.send(
        sender=action_request_execute_task,
        task_id="t-42",
        task=action_request_execute_task,
        args=(42,),
        kwargs={},
    )
    wait_for(
        lambda: ProcessBeat.objects.get(pid=os.getpid()).current == "action request execute 42",
        timeout=5,
        what="the task at a beat",
    )
    task_postrun.send(sender=action_request_execute_task, task_id="t-42")
    wait_for(
        lambda: ProcessBeat.objects.get(pid=os.getpid()).current == "",
        timeout=5,
        what="the task ended at a beat",
    )


def test_a_clean_stop_is_said_and_the_thread_ends(beating):
    beating_stop()

    row = ProcessBeat.objects.get(kind="worker", pid=os.getpid())
    assert row.stopped_at is not None
    assert not beating.is_alive()


@pytest.mark.django_db
def test_work_in_a_process_that_does_not_beat_is_ignored():
    work_started("task-1", "browse refresh")  # an eager task in a test, or in the web
    work_ended("task-1")

    assert not ProcessBeat.objects.exists()


def test_processes_gone_for_a_day_are_forgotten(beats):
    day = timedelta(days=1)
    beats.process("spark", pid=1, beat=day + timedelta(minutes=1))
    beats.process("worker", pid=2, beat=timedelta(hours=23))
    beats.process("beat", pid=3, beat=day, stopped=day + timedelta(seconds=1))
    beats.process("web", pid=4, beat=timedelta(seconds=1))

    assert process_beats_prune(now=beats.now) == 2
    assert sorted(ProcessBeat.objects.values_list("pid", flat=True)) == [2, 4]


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "said"),
    [
        (
            "workers.tasks.delivery_run_task",
            (),
            {"queues": ["orders", "billing"]},
            "delivery run orders, billing",
        ),
        ("workers.tasks.action_request_execute_task", (42,), {}, "action request execute 42"),
        ("workers.tasks.browse_refresh_task", (), {"full": True}, "browse refresh"),
        ("workers.tasks.sweep_leases_task", None, None, "sweep leases"),
        ("workers.tasks.lake_query_task", ("x" * 300,), {}, "lake query " + "x" * 100),
    ],
)
def test_a_task_is_said_by_its_name_and_main_argument(name, args, kwargs, said):
    assert work_text(name, args, kwargs) == said
