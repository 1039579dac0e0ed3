"""A handler may answer a call with a Deferred and settle its outcomes together at the end of the
batch (a publisher waiting for the broker's confirms). The engine treats a settled outcome like a
returned or raised one, and a batch that dies before settling leaves those messages unfinished."""

import os
import time

import pytest

from tests.engine.rows import handler_messages
from workers.engine import isolation as iso
from workers.engine.handlers import (
    Deferred,
    HandlerImportError,
    PermanentFailure,
    configurable,
    handler_build,
)


class _Confirming:
    """Defers every call; settles each by its body, as a broker's confirm or nack would."""

    def __init__(self, on_settle=None):
        self.pending = []
        self.on_settle = on_settle

    def __call__(self, message):
        if message.body == b"raise":
            raise ConnectionError("cannot reach the broker")
        deferred = Deferred(self.settle)
        self.pending.append((message.body, deferred))
        return deferred

    def settle(self):
        if self.on_settle:
            self.on_settle()
        for body, deferred in self.pending:
            if body == b"nack":
                deferred.fail(ConnectionError("the broker refused the publish (nack)"))
            elif body == b"unroutable":
                deferred.fail(PermanentFailure("no queue is bound"))
            elif body != b"forgotten":
                deferred.done()


def test_settled_outcomes_are_reported_like_returned_and_raised_ones():
    bodies = [b"ok", b"nack", b"raise", b"unroutable", b"forgotten", b"ok"]
    result = iso.run_isolated(handler_messages(bodies), _Confirming())
    assert result.crash is None
    assert result.codes == [
        iso.SUCCESS,
        iso.TRANSIENT,
        iso.TRANSIENT,
        iso.PERMANENT,
        iso.TRANSIENT,
        iso.SUCCESS,
    ]
    assert result.failures[1][:2] == ("the broker refused the publish (nack)", "ConnectionError")
    assert result.failures[3][:2] == ("no queue is bound", "PermanentFailure")
    assert result.failures[4][1] == "OutcomeUnknown"


def test_a_settle_that_raises_fails_the_calls_it_left_unresolved():
    def broken():
        raise ConnectionError("connection lost before the broker confirmed")

    result = iso.run_isolated(handler_messages([b"ok", b"ok"]), _Confirming(on_settle=broken))
    assert result.codes == [iso.TRANSIENT, iso.TRANSIENT]
    assert result.failures[0][0] == "connection lost before the broker confirmed"


def test_a_batch_that_dies_while_settling_leaves_its_deferred_messages_unfinished():
    result = iso.run_isolated(
        handler_messages([b"ok", b"raise", b"ok"]), _Confirming(on_settle=lambda: os._exit(9))
    )
    # The raised failure was final before the crash; the deferred ones had not finished, and
    # no message is charged with the crash: none was running.
    assert result.codes == [iso.PENDING, iso.TRANSIENT, iso.PENDING]
    assert result.in_flight is None
    assert result.crash == "process exited with code 9"


def test_a_settle_that_hangs_is_stopped_by_the_handler_timeout():
    result = iso.run_isolated(
        handler_messages([b"ok"]), _Confirming(on_settle=lambda: time.sleep(60)), timeout=1
    )
    assert result.codes == [iso.PENDING]
    assert result.in_flight is None
    assert result.crash == "handler's outcomes not settled after 1 s"


def test_a_permanent_failure_may_name_the_exception_and_stack_of_the_original_failure():
    def handler(message):
        raise PermanentFailure(
            "rejected by a consumer of queue 'orders'",
            exception_type="amqp.rejected",
            stack="Traceback: from the consumer",
        )

    result = iso.run_isolated(handler_messages([b"x"]), handler)
    assert result.failures[0] == (
        "rejected by a consumer of queue 'orders'",
        "amqp.rejected",
        "Traceback: from the consumer",
    )


def test_a_failure_from_elsewhere_without_a_stack_records_none_of_this_process():
    def handler(message):
        raise PermanentFailure("expired in queue 'orders'", exception_type="amqp.expired")

    result = iso.run_isolated(handler_messages([b"x"]), handler)
    assert result.failures[0] == ("expired in queue 'orders'", "amqp.expired", "")


def test_a_permanent_failure_of_this_handler_keeps_its_own_type_and_traceback():
    def handler(message):
        raise PermanentFailure("missing field: customer")

    result = iso.run_isolated(handler_messages([b"x"]), handler)
    reason, exc_type, stack = result.failures[0]
    assert (reason, exc_type) == ("missing field: customer", "PermanentFailure")
    assert "Traceback" in stack and "in handler" in stack


@configurable
def _greeter(*, greeting="hello"):
    def handler(message):
        return f"{greeting} {message.id}"

    return handler


def test_a_configurable_handler_is_built_from_its_queues_options():
    handler = handler_build(f"{__name__}._greeter", {"greeting": "hi"})
    assert handler(handler_messages([b""])[0]) == "hi m0"


def test_options_a_handler_does_not_take_are_refused_with_the_reason():
    with pytest.raises(HandlerImportError, match=r"refused its handler_options.*colour"):
        handler_build(f"{__name__}._greeter", {"colour": "red"})
    with pytest.raises(HandlerImportError, match="takes no handler_options"):
        handler_build("tests.engine.rows.handler_messages", {"greeting": "hi"})
