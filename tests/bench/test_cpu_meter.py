"""bench.support.CpuMeter, with real processes: what a benchmark's CPU per message is read from."""

import subprocess
import sys
import time
from pathlib import Path

from bench.support import CPU_PER_MESSAGE, CpuMeter

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
# User and system time are each cut to whole clock ticks, a process: a little under 0.3 s.
BURNT = 0.28


def _python(code, executable=sys.executable):
    return [str(executable), "-c", code]


def test_a_child_that_ends_during_the_measure_is_counted():
    with CpuMeter(servers=()) as meter:
        subprocess.run(_python(BURN), check=True)

    assert meter.cpu_seconds >= BURNT
    assert meter.seconds >= 0.3


def test_a_child_still_running_at_the_end_is_counted():
    with CpuMeter(servers=()) as meter:
        child = subprocess.Popen(
            _python(BURN + "\nprint('burnt', flush=True)\ninput()"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout.readline() == "burnt\n"
    try:
        assert meter.cpu_seconds >= BURNT
    finally:
        child.kill()
        child.wait()


def test_an_orphan_that_ends_during_the_measure_counts_its_last_reading():
    # Its parent ends without waiting for it: init reaps it, and only the sampler saw it burn.
    # It idles before and after, so that the sampler reads it before and after it burns.
    orphan = "import time\ntime.sleep(0.6)\n" + BURN + "\ntime.sleep(0.6)"
    parent = (
        f"import subprocess, sys, time\nprint(subprocess.Popen([sys.executable, '-c', {orphan!r}])"
        ".pid)\ntime.sleep(0.6)"
    )
    with CpuMeter(servers=()) as meter:
        started = subprocess.run(_python(parent), check=True, capture_output=True, text=True)
        gone = Path(f"/proc/{int(started.stdout)}")
        deadline = time.monotonic() + 30
        while gone.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not gone.exists()

    assert meter.cpu_seconds >= BURNT


def test_what_ran_before_the_measure_is_not_counted():
    subprocess.run(_python(BURN), check=True)  # in this process's reaped children's time

    with CpuMeter(servers=()) as meter:
        time.sleep(0.3)

    assert meter.cpu_seconds < 0.1
    assert meter.per_message(1000) == {CPU_PER_MESSAGE: round(meter.cpu_seconds / 1000 * 1e6, 1)}


def test_a_server_is_found_by_its_name_and_measured_alone(tmp_path):
    # A Python of its own name: the process's name is that of the file it runs.
    executable = tmp_path / "bench-server"
    executable.symlink_to(sys.executable)
    server = subprocess.Popen(
        _python("input()\n" + BURN + "\nprint('burnt', flush=True)\ninput()", executable),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(0.3)  # started: the measure finds it by its name
        with CpuMeter(servers=("bench-server",), roots=()) as meter:
            server.stdin.write("go\n")
            server.stdin.flush()
            assert server.stdout.readline() == "burnt\n"
        assert meter.servers_cpu_seconds >= BURNT
        assert meter.cpu_seconds == meter.servers_cpu_seconds
    finally:
        server.kill()
        server.wait()
