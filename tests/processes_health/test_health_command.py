"""manage.py health: exit 0 when the database answers and the process asked for beats; exit 1
(CommandError, one sentence) when it is down, stale or stopped, or the database is gone."""

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.processes_health.conftest import HOST, database_gone


def _health(*args):
    out = StringIO()
    call_command("health", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def stale_seconds(settings):
    settings.HEARTBEAT_SECONDS = 10
    settings.HEARTBEAT_STALE_SECONDS = 30
    return 30


def test_it_passes_when_the_worker_beat_lately(beats, stale_seconds):
    beats.process("worker", pid=4242, beat=timedelta(seconds=5))

    said = _health("--process", "worker")

    assert re.match(
        rf"default worker on {HOST}: alive \(pid 4242, last heartbeat [5-8] s ago\)", said
    )


def test_it_fails_when_the_only_worker_beat_longer_ago_than_the_stale_age(beats, stale_seconds):
    beats.process("worker", pid=4242, beat=timedelta(seconds=stale_seconds + 5))

    with pytest.raises(CommandError) as failed:
        _health("--process", "worker")

    assert re.fullmatch(
        rf"No default worker on {HOST} has beaten in the last 30 s "
        rf"\(the last one, pid 4242 on {HOST}, beat 3[5-8] s ago\)\.",
        str(failed.value),
    )


def test_a_worker_that_stopped_cleanly_is_down_however_recent_its_beat(beats, stale_seconds):
    beats.process("worker", pid=4242, beat=timedelta(seconds=2), stopped=timedelta(seconds=1))

    with pytest.raises(CommandError, match=r"stopped \d s ago"):
        _health("--process", "worker")


def test_max_age_overrides_the_stale_age(beats, stale_seconds):
    beats.process("worker", pid=4242, beat=timedelta(seconds=20))

    assert "alive" in _health("--process", "worker")
    with pytest.raises(CommandError):
        _health("--process", "worker", "--max-age", "10")


def test_it_looks_on_this_host_unless_told_another_or_any(beats, stale_seconds):
    beats.process("spark", pid=7, host="spark-host-2", beat=timedelta(seconds=1))

    with pytest.raises(CommandError, match=f"No spark worker on {HOST} "):
        _health("--process", "spark")
    assert "alive" in _health("--process", "spark", "--host", "spark-host-2")
    assert "alive" in _health("--process", "spark", "--host", "any")


def test_without_a_process_it_checks_every_kind_and_prints_a_table(beats, stale_seconds):
    for pid, kind in enumerate(("web", "spark", "worker", "beat"), start=1):
        beats.process(kind, pid=pid, beat=timedelta(seconds=3))

    said = _health()

    lines = said.splitlines()
    assert lines[0].split() == ["process", "state", "host", "pid", "last", "heartbeat"]
    assert [line.split()[0] for line in lines[1:]] == ["web", "spark", "default", "scheduler"]
    assert all(" alive " in line for line in lines[1:])


def test_without_a_process_it_names_the_kinds_that_are_down(beats, stale_seconds):
    beats.process("web", pid=1, beat=timedelta(seconds=3))
    beats.process("spark", pid=2, beat=timedelta(minutes=5))
    beats.process("worker", pid=3, beat=timedelta(seconds=3))

    with pytest.raises(CommandError) as failed:
        _health()

    assert str(failed.value) == (
        "Not running (no heartbeat in the last 30 s): spark worker, scheduler (beat)."
    )


@pytest.mark.django_db
def test_it_fails_when_the_database_is_gone(tmp_path):
    with database_gone(tmp_path), pytest.raises(CommandError, match="does not answer"):
        _health("--process", "web")


def test_with_a_pid_only_that_process_counts(beats, stale_seconds):
    beats.process("spark", pid=4242, beat=timedelta(seconds=2))

    assert "alive (pid 4242" in _health("--process", "spark", "--pid", "4242")
    with pytest.raises(CommandError) as failed:
        _health("--process", "spark", "--pid", "5151")
    assert str(failed.value) == (
        f"No spark worker on {HOST} with pid 5151 has beaten in the last 30 s (none ever reported)."
    )


def test_a_pid_without_a_process_is_refused(beats):
    with pytest.raises(CommandError, match="--pid needs --process"):
        _health("--pid", "4242")


def test_wait_asks_again_each_second_until_the_process_beats(beats, stale_seconds, monkeypatch):
    from console.processes.management.commands import health

    pauses = []

    def pause(seconds):
        # The unit's process comes up while the command waits: its first beat lands now.
        pauses.append(seconds)
        if len(pauses) == 2:
            beats.process("spark", pid=4242, beat=timedelta(0))

    monkeypatch.setattr(health.time, "sleep", pause)

    said = _health("--process", "spark", "--pid", "4242", "--wait", "30")

    assert pauses == [1, 1]
    assert "alive (pid 4242" in said


def test_wait_gives_up_with_the_last_answer_when_its_time_is_up(beats, stale_seconds):
    with pytest.raises(CommandError, match=rf"No scheduler \(beat\) on {HOST} "):
        _health("--process", "beat", "--wait", "2")
