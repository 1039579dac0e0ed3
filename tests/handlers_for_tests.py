"""Handlers the engine tests deliver to. Each reads its behaviour from the message body, so a
test states the outcome it wants in the data it ingests."""

import os
import time

from workers.engine.handlers import PermanentFailure


def _act(outcome):
    """'ok' returns; 'transient' and 'permanent' fail that way; 'crash' exits the process."""
    if outcome == "transient":
        raise ConnectionError("inventory service unavailable")
    if outcome == "permanent":
        raise PermanentFailure("missing field: customer")
    if outcome == "crash":
        os._exit(70)


_OUTCOMES = ("ok", "transient", "permanent", "crash")
# A sequence's steps, by the letter its script names them with.
_STEPS = {"ok": "ok", "t": "transient", "p": "permanent", "c": "crash"}


def scripted(message):
    """Body 'ok' succeeds; 'transient' and 'permanent' fail that way; 'crash' exits the
    process; 'crash-once:<path>' crashes until the marker file exists; 'sleep' hangs."""
    body = message.body.decode()
    if body == "sleep":
        time.sleep(3600)
    if body not in _OUTCOMES:
        raise ValueError(f"unexpected body {body!r}")
    _act(body)


def always_ok(message):
    return None


def always_transient(message):
    raise ConnectionError("ledger service is down")


def sequence(message):
    """Body 'ok', or a comma-separated script of outcomes by attempt ('t,t,ok'; 't' transient,
    'p' permanent, 'c' crash); the last entry repeats."""
    script = message.body.decode().split(",")
    step = script[min(message.attempt - 1, len(script) - 1)]
    if step not in _STEPS:
        raise ValueError(f"unknown step {step!r}")
    _act(_STEPS[step])


def calls_recorded(message):
    """Succeeds, leaving a file named after the message in the folder its body names, so a test
    can tell whether a handler was called at all."""
    folder = message.headers["record-to"]
    with open(os.path.join(folder, message.id), "a") as f:
        f.write("called\n")


def held(message):
    """Succeeds, but only once the file named by the 'hold-while' header is gone: a test keeps
    the message in flight for as long as it likes."""
    flag = message.headers["hold-while"]
    while os.path.exists(flag):
        time.sleep(0.05)


def held_and_recorded(message):
    """calls_recorded, after waiting as held does while its message has a 'hold-while' header."""
    if "hold-while" in message.headers:
        held(message)
    calls_recorded(message)


def headers_recorded_then_failed(message):
    """Appends the message's body, headers and redrive target (one JSON line) to a file named
    after it in the folder its 'record-to' header names, then fails transiently: a test reads
    what each attempt was handed, and the message can be reprocessed again."""
    import json

    folder = message.headers["record-to"]
    attempt = {
        "body": message.body.decode(),
        "headers": message.headers,
        "redrive_target": message.redrive_target,
    }
    with open(os.path.join(folder, message.id), "a") as f:
        f.write(json.dumps(attempt) + "\n")
    raise ConnectionError("the new consumer is not there yet")


def booked(message):
    """An order booking that fails the same way for two causes: a JSON body without a
    `currency`, or the header `x-region: eu-west-3` (a region the carrier does not serve). "Why do
    these fail" must find both."""
    import json

    order = json.loads(message.body)
    if "currency" not in order or message.headers.get("x-region") == "eu-west-3":
        raise PermanentFailure("the carrier refused the booking")
