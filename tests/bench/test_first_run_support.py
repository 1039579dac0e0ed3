"""bench/first_run.py's parts that need no `make run`: CPU seconds of a process tree from /proc
(bench.support's, which it reads), gone children included, and the passwords seed_demo prints."""

import os
import subprocess
import sys

from bench.first_run import FirstRun
from bench.support import process_tree_cpu

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass"


def test_a_child_that_ended_still_counts_in_its_parents_cpu_seconds():
    before = process_tree_cpu(os.getpid())

    subprocess.run([sys.executable, "-c", BURN], check=True)  # waited for: in our cutime

    assert process_tree_cpu(os.getpid()) - before >= 0.5


def test_a_living_child_counts_under_its_parent():
    # The child says when it has burnt its half second; polling /proc for 0.5 s instead could
    # wait for ever, as user and system time are each cut to whole ticks.
    child = subprocess.Popen(
        [sys.executable, "-c", BURN + "\nprint('burnt', flush=True)\ninput()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline() == "burnt\n"
        burnt = process_tree_cpu(child.pid)
        assert burnt >= 0.45  # two ticks of rounding at most
        assert process_tree_cpu(os.getpid()) >= burnt
    finally:
        child.kill()
        child.wait()


def test_the_password_is_read_from_seed_demos_table_not_from_seed_roles_lines(tmp_path):
    run = FirstRun(tmp_path)
    printed = [
        "viewer    created    11 permission(s)",
        "user         role         password",
        "viewer       viewer       aoxhRPXCXaapVnOz  created",
        "admin2       admin        KPGjGr5oUhxiEegK  created",
    ]
    run.lines = [(0.0, line) for line in printed]

    assert run.password("viewer") == "aoxhRPXCXaapVnOz"
    assert run.password("admin2") == "KPGjGr5oUhxiEegK"
    assert run.password("nobody") is None
