"""Handler calls in a forked child: a crash, a hang or an exit takes down one batch, and the
engine still knows exactly which messages finished."""

import os
import sys
import time

from tests.engine.rows import handler_messages
from workers.engine import isolation as iso
from workers.engine.handlers import PermanentFailure
from workers.engine.policy import policy_from_mapping
from workers.engine.runner import QueueStreaks


def _call(message):
    if message.body == b"transient":
        raise ConnectionError("inventory service unavailable")
    if message.body == b"permanent":
        raise PermanentFailure("missing field: customer")
    if message.body == b"exit":
        os._exit(3)
    if message.body == b"sys.exit":
        sys.exit(4)
    if message.body == b"hang":
        time.sleep(60)


def test_it_reports_each_outcome_and_the_failure_reasons():
    result = iso.run_isolated(handler_messages([b"ok", b"transient", b"permanent", b"ok"]), _call)
    assert result.codes == [iso.SUCCESS, iso.TRANSIENT, iso.PERMANENT, iso.SUCCESS]
    assert result.crash is None
    assert result.failures[1][:2] == ("inventory service unavailable", "ConnectionError")
    assert result.failures[2][:2] == ("missing field: customer", "PermanentFailure")
    assert "Traceback" in result.failures[1][2]


def test_a_handler_that_exits_its_process_is_found_in_flight():
    result = iso.run_isolated(handler_messages([b"ok", b"transient", b"exit", b"ok", b"ok"]), _call)
    assert result.codes == [iso.SUCCESS, iso.TRANSIENT, iso.PENDING, iso.PENDING, iso.PENDING]
    assert result.in_flight == 2
    assert result.crash == "process exited with code 3"
    # The failure sent before the crash survives it.
    assert result.failures[1][0] == "inventory service unavailable"


def test_sys_exit_in_a_handler_is_a_crash_too():
    result = iso.run_isolated(handler_messages([b"sys.exit", b"ok"]), _call)
    assert (result.in_flight, result.crash) == (0, "process exited with code 4")


def test_a_handler_that_hangs_is_killed_after_the_timeout():
    result = iso.run_isolated(handler_messages([b"ok", b"hang", b"ok"]), _call, timeout=1)
    assert result.codes[0] == iso.SUCCESS
    assert result.in_flight == 1
    assert result.crash == "handler timed out after 1 s"


def test_the_child_stops_calling_a_queue_once_it_reaches_disable_after():
    policies = {
        "q": policy_from_mapping(
            {"name": "q", "handler": "json.loads", "disable_after": 3, "consecutive_failures": 1}
        )
    }
    streaks = QueueStreaks(policies)
    result = iso.run_isolated(
        handler_messages([b"transient"] * 5), _call, streaks=streaks.snapshot()
    )
    assert result.codes == [iso.TRANSIENT, iso.TRANSIENT, iso.SKIPPED, iso.SKIPPED, iso.SKIPPED]


def test_each_call_is_timed_into_its_bucket_failures_included():
    from workers.engine.timings import HANDLER_BUCKETS, slot

    def call(message):
        time.sleep(float(message.body.split(b":")[1]))
        if message.body.startswith(b"fail"):
            raise ConnectionError("down")

    bodies = [b"ok:0", b"ok:0.03", b"fail:0.03", b"ok:0.3"]
    result = iso.run_isolated(handler_messages(bodies), call)

    assert result.codes == [iso.SUCCESS, iso.SUCCESS, iso.TRANSIENT, iso.SUCCESS]
    counts = list(result.time_counts)
    # Every call is counted once, failures included.
    assert sum(counts) == 4
    # A call lands no lower than it lasted; a busy machine can only push it higher, so no upper
    # bound is asserted: both 30 ms calls and the 300 ms one above the 25 ms bound, the 300 ms
    # one in the 0.5 s bucket or above.
    assert sum(counts[slot(0.026) :]) >= 3
    assert sum(counts[slot(0.3) :]) >= 1
    assert HANDLER_BUCKETS[slot(0.3)] == 0.5
    assert result.time_sum >= 0.36


def test_a_batch_whose_child_died_has_no_times():
    result = iso.run_isolated(handler_messages([b"ok", b"exit"]), _call)

    assert result.crash == "process exited with code 3"
    assert sum(result.time_counts) == 0 and result.time_sum == 0
