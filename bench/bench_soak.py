"""The soak (issue 29), run on request only (`python -m bench soak`): see bench/soak.py. The soak
runs in a child process, on a PostgreSQL database and a Redis database of its own, since Django
chooses its database once, at start. Its progress is shown as it goes; its rows are the table.
Size from the environment: SOAK_MESSAGES, SOAK_MINUTES, SOAK_KILLS (bench/soak.py)."""

import json
import subprocess
import sys

from bench.support import ROOT, ROWS_MARKER


class SoakFailed(RuntimeError):
    """An invariant failed: the rows (with their FAIL) still go in the table and the JSON."""

    def __init__(self, message, rows):
        super().__init__(message)
        self.rows = rows


def run():
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.soak", "--rows-only"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    rows = None
    for line in child.stdout:
        if line.startswith(ROWS_MARKER):
            rows = json.loads(line[len(ROWS_MARKER) :])
        else:
            print(line, end="", flush=True)
    code = child.wait()
    if rows is None:
        raise RuntimeError(f"the soak ended ({code}) without its results")
    if code != 0:
        failed = [r["soak"] for r in rows if r["result"] == "FAIL"]
        raise SoakFailed(f"the soak failed: {', '.join(failed)}", rows)
    return rows
