"""Run one isolation batch of handler calls in a forked child process.

A handler that ends its process (``os._exit``, abort, out of memory, a segfault in a C extension)
must not take the delivery run down with it, and the engine must know exactly which messages
finished before it did (R7, R8, R10). So each batch runs in a child forked from the Spark Python
worker: the child writes its progress into a shared memory page (the index of the message in
flight, then one outcome byte per message), which survives the child's death, and sends the
details of failures (rare) through a pipe. Successes cost two memory writes and nothing else,
but the clock: the child times each call and, once the batch is done, writes the batch's
histogram of call durations (workers.engine.timings) after the outcome bytes.
"""

import mmap
import os
import pickle
import select
import signal
import struct
import time
import traceback
from dataclasses import dataclass, field

from workers.engine import timings
from workers.engine.handlers import (
    Deferred,
    OutcomeUnknown,
    PermanentFailure,
    TransientFailure,
    retry_after_seconds,
)

PENDING = 0
SUCCESS = 1
TRANSIENT = 2
PERMANENT = 3
SKIPPED = 4  # not attempted: the queue was disabled earlier in this batch (R11)

_HEADER = struct.Struct("qd")  # index in flight, monotonic time its call started
IDLE = -1  # no call running: between calls, or the batch is done
SETTLING = -2  # the calls are made; their deferred outcomes are being waited for
_LEN = struct.Struct("I")
# The batch's call durations: a count per histogram slot, and their sum in seconds.
_TIMES = struct.Struct(f"{timings.SLOTS}Id")
MAX_REASON = 2000
MAX_STACK = 8000


@dataclass
class BatchResult:
    codes: list
    failures: dict = field(default_factory=dict)  # index -> (reason, exception type, stack)
    # index -> seconds: the earliest retry a TransientFailure asked for (its `retry_after`)
    retry_after: dict = field(default_factory=dict)
    in_flight: int | None = None  # the message whose handler was running when the child died
    crash: str | None = None  # how the child died; None if it finished normally
    worker: str = ""
    # How long the calls took: a count per workers.engine.timings slot (all 0 if the child
    # died), and their sum in seconds.
    time_counts: tuple = ()
    time_sum: float = 0.0


def describe_exit(status):
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = str(signum)
        return f"process killed by signal {signum} ({name})"
    return f"process exited with code {os.waitstatus_to_exitcode(status)}"


def _failure_record(index, exc, *, transient):
    reason = str(exc) or exc.__class__.__name__
    if transient and not isinstance(exc, Exception):
        reason = f"{exc.__class__.__name__}: {reason}"
    # A PermanentFailure may carry the type and stack of a failure that happened elsewhere. This
    # process's traceback says nothing of such a failure (and formatting it costs more than the
    # rest of a failed call): one that names its type but has no stack records none.
    elsewhere = isinstance(exc, PermanentFailure) and (exc.exception_type or exc.stack)
    if elsewhere:
        exc_type = exc.exception_type or exc.__class__.__name__
        stack = exc.stack or ""
    else:
        exc_type = exc.__class__.__name__
        stack = "".join(traceback.format_exception(exc))
    # Checked again: a handler may have set the attribute after raising, and only a number
    # may go through the pipe.
    retry_after = None
    if isinstance(exc, TransientFailure):
        retry_after = retry_after_seconds(getattr(exc, "retry_after", None))
    return pickle.dumps(
        (index, reason[:MAX_REASON], str(exc_type), str(stack)[-MAX_STACK:], retry_after)
    )


def _failed(index, exc, wfd):
    permanent = isinstance(exc, PermanentFailure)
    record = _failure_record(index, exc, transient=not permanent)
    os.write(wfd, _LEN.pack(len(record)) + record)
    return PERMANENT if permanent else TRANSIENT


def _settle(deferred, messages, streaks, shm, wfd):
    """Wait for the deferred outcomes, then write them. Until written, their codes stay PENDING:
    a child that dies meanwhile leaves them unfinished, to be delivered again."""
    _HEADER.pack_into(shm, 0, SETTLING, time.monotonic())
    for settle in {id(d.settle): d.settle for _, d in deferred}.values():
        try:
            settle()
        except Exception as exc:  # a settle that fails leaves its calls' outcomes unknown
            for _, d in deferred:
                if d.settle is settle and not d.settled:
                    d.fail(exc)
    for index, d in deferred:
        if d.settled and d.error is None:
            code = SUCCESS
        else:
            code = _failed(index, d.error or OutcomeUnknown("the handler never said"), wfd)
        shm[_HEADER.size + index] = code
        if streaks is not None:
            streaks.record(messages[index].queue, code)


def _times_at(n):
    """Where the durations go: after the header and n outcome bytes, on an 8-byte boundary."""
    return -(-(_HEADER.size + n) // 8) * 8


def _child(messages, call, streaks, shm, wfd):
    codes_at = _HEADER.size
    deferred = []
    counts = [0] * timings.SLOTS
    took = 0.0
    try:
        for index, message in enumerate(messages):
            if streaks is not None and streaks.disabled(message.queue):
                shm[codes_at + index] = SKIPPED
                continue
            started = time.monotonic()
            _HEADER.pack_into(shm, 0, index, started)
            try:
                outcome = call(message)
            except SystemExit as exc:
                # The handler asked to end its process: honour it, it is a crash (R10).
                code = exc.code if isinstance(exc.code, int) else 1
                os._exit(code or 1)
            except BaseException as exc:
                code = _failed(index, exc, wfd)
            else:
                code = SUCCESS if type(outcome) is not Deferred else None
            seconds = time.monotonic() - started
            counts[timings.slot(seconds)] += 1
            took += seconds
            if code is None:
                deferred.append((index, outcome))
                continue
            shm[codes_at + index] = code
            if streaks is not None:
                streaks.record(message.queue, code)
        if deferred:
            _settle(deferred, messages, streaks, shm, wfd)
        _TIMES.pack_into(shm, _times_at(len(messages)), *counts, took)
        _HEADER.pack_into(shm, 0, IDLE, 0.0)
    finally:
        os._exit(0)


def _read_records(buffer):
    records = []
    offset = 0
    while len(buffer) - offset >= _LEN.size:
        (length,) = _LEN.unpack_from(buffer, offset)
        if len(buffer) - offset - _LEN.size < length:
            break  # the child died while writing this one; it is lost with the child
        records.append(
            # Our own child wrote these bytes, a moment ago, through a private pipe.
            pickle.loads(bytes(buffer[offset + _LEN.size : offset + _LEN.size + length]))  # noqa: S301
        )
        offset += _LEN.size + length
    return records


def run_isolated(messages, call, *, timeout=300.0, streaks=None):
    """Call `call(message)` for each message in a forked child; return what became of each.

    `streaks` (a QueueStreaks) lets the child stop calling a queue's handler once the queue
    reaches its disable_after threshold within this batch (R11)."""
    size = _times_at(len(messages)) + _TIMES.size
    shm = mmap.mmap(-1, max(size, mmap.PAGESIZE))
    _HEADER.pack_into(shm, 0, IDLE, 0.0)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which never returns
        os.close(rfd)
        _child(messages, call, streaks, shm, wfd)
    os.close(wfd)
    buffer = bytearray()
    timed_out = None
    try:
        while True:
            ready, _, _ = select.select([rfd], [], [], 1.0)
            if ready:
                chunk = os.read(rfd, 1 << 16)
                if not chunk:
                    break
                buffer += chunk
                continue
            index, started = _HEADER.unpack_from(shm, 0)
            if index != IDLE and time.monotonic() - started > timeout:
                timed_out = index
                os.kill(pid, signal.SIGKILL)
    finally:
        os.close(rfd)
    _, status = os.waitpid(pid, 0)
    codes = list(shm[_HEADER.size : _HEADER.size + len(messages)])
    index, _ = _HEADER.unpack_from(shm, 0)
    *time_counts, time_sum = _TIMES.unpack_from(shm, _times_at(len(messages)))
    shm.close()
    result = BatchResult(
        codes=codes,
        worker=f"{os.uname().nodename}:{pid}",
        time_counts=tuple(time_counts),
        time_sum=time_sum,
    )
    for rec_index, reason, exc_type, stack, retry_after in _read_records(buffer):
        result.failures[rec_index] = (reason, exc_type, stack)
        if retry_after is not None:
            result.retry_after[rec_index] = retry_after
    normal = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and index == IDLE
    if not normal:
        if timed_out == SETTLING:
            result.crash = f"handler's outcomes not settled after {timeout:g} s"
        elif timed_out is not None:
            result.crash = f"handler timed out after {timeout:g} s"
        else:
            result.crash = describe_exit(status)
        result.in_flight = index if index >= 0 else None
    return result
