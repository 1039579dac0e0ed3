"""The lease sweepers' tests, written once for every kind of run under a lease (console.leases):
tasks may be lost, runs may not. A sweeper hands queued runs that waited over a minute, and
running ones whose heartbeat stopped, to the broker again, at most once a minute each, and gives
up on a run whose worker died MAX_ATTEMPTS times.

A kind of run takes them by subclassing `SweeperTests` in its own test module (see its
docstring for what a subclass names)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from console.leases import MAX_ATTEMPTS
from tests.leased_runs import leased_run


class SweeperTests:
    """A subclass names `model` and `sweep` (the sweeper, as a staticmethod), and gives:

    - a `run_fields` fixture: the fields of a run of its kind beyond its lease, as `make` makes
      them unless a test says otherwise;
    - `finished_statuses`: each status the sweeper must leave alone, a case each;
    - `tasks()`: the Celery task that runs one and the task that sweeps, imported when called;
    - `assert_given_up_audited(run)`: what the audit trail holds of a run given up on.
    """

    model = None
    sweep = None
    finished_statuses = ()
    # Fields of the run the sweeper gives up on, beyond its lease.
    given_up_fields = {}

    @pytest.fixture
    def delays(self):
        """What the sweeper hands to the broker, in order."""
        return []

    @pytest.fixture
    def now(self):
        return timezone.now()

    @pytest.fixture
    def make(self, now, run_fields):
        def make(status=None, *, enqueued=0, heartbeat=None, attempts=0, **fields):
            """A run last handed to the broker `enqueued` seconds before `now`, its heartbeat
            `heartbeat` seconds before (None: it never beat)."""
            return leased_run(
                self.model,
                now=now,
                status=status or self.model.QUEUED,
                enqueued=enqueued,
                heartbeat=heartbeat,
                attempts=attempts,
                **(run_fields | fields),
            )

        return make

    def pytest_generate_tests(self, metafunc):
        if "finished" in metafunc.fixturenames:
            metafunc.parametrize("finished", self.finished_statuses)

    def tasks(self):
        raise NotImplementedError

    def assert_given_up_audited(self, run):
        raise NotImplementedError

    def test_a_run_queued_over_a_minute_ago_is_handed_over_again(self, make, delays, now):
        lost = make(enqueued=61)
        make(enqueued=30)  # its task may still be on its way

        assert self.sweep(enqueue=delays.append, now=now) == [lost.id]
        assert delays == [lost.id]
        assert self.model.objects.get(id=lost.id).enqueued_at == now

    def test_a_running_run_whose_heartbeat_stopped_is_handed_over_again(
        self, make, delays, now, settings
    ):
        beat = 3 * settings.HEARTBEAT_SECONDS
        dead = make(self.model.RUNNING, enqueued=600, heartbeat=beat + 1, attempts=1)
        make(self.model.RUNNING, enqueued=600, heartbeat=beat - 1, attempts=1)

        assert self.sweep(enqueue=delays.append, now=now) == [dead.id]
        assert delays == [dead.id]

    def test_a_run_is_handed_over_at_most_once_a_minute(self, make, delays, now):
        lost = make(enqueued=61)
        self.sweep(enqueue=delays.append, now=now)

        assert self.sweep(enqueue=delays.append, now=now + timedelta(seconds=59)) == []
        assert self.sweep(enqueue=delays.append, now=now + timedelta(seconds=61)) == [lost.id]
        assert delays == [lost.id, lost.id]

    def test_finished_runs_are_left_alone(self, make, delays, now, finished):
        make(finished, enqueued=3600, heartbeat=3600)

        assert self.sweep(enqueue=delays.append, now=now) == []
        assert delays == []

    def test_a_run_whose_worker_died_each_time_is_given_up_and_audited(
        self, make, delays, now, settings
    ):
        doomed = make(
            self.model.RUNNING,
            enqueued=600,
            heartbeat=3 * settings.HEARTBEAT_SECONDS + 1,
            attempts=MAX_ATTEMPTS,
            **self.given_up_fields,
        )

        assert self.sweep(enqueue=delays.append, now=now) == []
        doomed.refresh_from_db()
        assert doomed.status == self.model.FAILED
        assert doomed.error.startswith(
            f"given up after {MAX_ATTEMPTS} attempts: the worker running it stopped each time"
        )
        self.assert_given_up_audited(doomed)

    def test_a_broker_that_is_down_leaves_the_run_for_the_next_sweep(self, make, now):
        def down(run_id):
            raise ConnectionError("broker unreachable")

        lost = make(enqueued=61)

        assert self.sweep(enqueue=down, now=now) == []
        assert self.model.objects.get(id=lost.id).status == self.model.QUEUED

    def test_the_sweep_task_hands_lost_runs_to_the_spark_workers_task(self, make, monkeypatch):
        run_task, sweep_task = self.tasks()
        sent = []
        monkeypatch.setattr(run_task, "delay", lambda run_id: sent.append(run_id))
        lost = make(enqueued=61)

        assert sweep_task() == 1
        assert sent == [lost.id]
