"""The soak's handler (bench/soak.py). Each message's body says what its handler does, and every
successful call is written down outside the product before the handler returns: the soak
compares the product's states with what really happened to each message.

A body is JSON with `do`:
- "ok": succeeds;
- "t2": fails transiently on attempts 1 and 2, then succeeds;
- "t": always fails transiently (the queue's maximum of failed deliveries takes it out, R3/R4);
- "p": fails permanently (R6);
- "c": ends its process, as a fatal error in a handler does (R7, R8, R10).

A queue whose handler_options say `accept_all` (an exception queue that only stores what it is
given) succeeds whatever the body says.

A success is one line, "<message id> <queue> <attempt> <pid> <time>", appended with one write
to a file of the process that made the call (its own file: no two writers share one). An
O_APPEND write reaches the kernel before the handler returns, so it outlives a SIGKILL of the
process a moment later; only a crash of the machine, which the soak does not cause, could lose
it, so there is no fsync per call."""

import json
import os
import time

from workers.engine.handlers import PermanentFailure, configurable

CALLS_SUFFIX = ".calls"
# The file descriptor of this process's record, opened on its first success. The engine forks a
# child for each isolation batch: a child has a pid, and a file, of its own.
_opened = {}


def behaviour(message):
    return json.loads(message.body)["do"]


@configurable
def scripted(*, record_to, accept_all=False):
    """The handler of every soak queue. `record_to`: the folder of the success records."""

    def handle(message):
        do = "ok" if accept_all else behaviour(message)
        if do == "c":
            os._exit(70)
        if do == "p":
            raise PermanentFailure(f"order {message.id} refers to an unknown customer")
        if do == "t" or (do == "t2" and message.attempt <= 2):
            raise ConnectionError("inventory service unavailable")
        if do not in ("ok", "t2"):
            raise PermanentFailure(f"unknown behaviour {do!r}")
        _record(record_to, f"{message.id} {message.queue} {message.attempt}")

    return handle


def _record(folder, what):
    pid = os.getpid()
    fd = _opened.get(pid)
    if fd is None:
        path = os.path.join(folder, f"{pid}{CALLS_SUFFIX}")
        fd = _opened[pid] = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, f"{what} {pid} {time.time():.3f}\n".encode())


def calls_read(folder):
    """{message id: [(queue, attempt, time)]} of every success recorded in `folder`. A line cut
    short (its writer killed in the middle of it: a write this small is not cut in practice,
    but a reader must not take half a line for an id) is left out."""
    calls = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(CALLS_SUFFIX):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if not line.endswith("\n") or len(parts) != 5:
                    continue
                message_id, queue, attempt, _, at = parts
                calls.setdefault(message_id, []).append((queue, int(attempt), float(at)))
    return calls
