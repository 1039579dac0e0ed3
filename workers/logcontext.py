"""What a log line is about: the HTTP request, the Celery task, the run, the decision, the queue,
the message. Set for a block with `log_context(...)`; `LogContext`, a filter on the handler,
copies the current values onto every record, and the JSON format writes those that are set, so
that one message can be followed across the web, the workers and the delivery runs.

Plain Python and contextvars (no Django): the web, the workers and the engine's handler calls
all set it. A thread starts with an empty context: work handed to another thread carries it
only when submitted through `contextvars.copy_context().run`.
"""

import contextlib
import contextvars
import logging
import socket
from datetime import UTC, datetime
from types import MappingProxyType

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

# The fields, in the order a JSON line shows them:
# request_id        the HTTP request (the web; X-Request-ID)
# task_id           the Celery task
# run_id            a delivery run ("42", as its events' run_id in the lake), a refresh
#                   ("refresh:7"), a decision's execution ("request:5", as its events')
# action_request_id the decision (ActionRequest) being carried out
# queue, source     the queue (comma-separated for a run of several) and the broker source
# message_id        the one message a line is about
FIELDS = ("request_id", "task_id", "run_id", "action_request_id", "queue", "source", "message_id")

_KNOWN = frozenset(FIELDS)
_current = contextvars.ContextVar("antidote_log_context", default=MappingProxyType({}))


def log_bind(**fields):
    """Set `fields` on top of the current ones; returns the token `log_unbind` takes. For
    code that cannot hold a `with` block (a pair of signals, a middleware's hook inside a
    `log_context` that undoes it); otherwise `log_context`."""
    unknown = fields.keys() - _KNOWN
    if unknown:
        raise TypeError(f"not a log context field: {', '.join(sorted(unknown))}")
    return _current.set({**_current.get(), **fields})


def log_unbind(token):
    """Back to the fields as they were before the `log_bind` that gave `token`."""
    _current.reset(token)


@contextlib.contextmanager
def log_context(**fields):
    """The log lines of the block carry `fields` (on top of the ones already set)."""
    token = log_bind(**fields)
    try:
        yield
    finally:
        log_unbind(token)


class LogContext(logging.Filter):
    """On a handler: every record gets each field, the context's value or None. A value given
    to the call itself (`extra={"message_id": ...}`) wins."""

    def filter(self, record):
        current = _current.get()
        for name in FIELDS:
            if getattr(record, name, None) is None:
                setattr(record, name, current.get(name))
        return True


class JsonFormatter(_JsonFormatter):
    """One JSON object per line: time (ISO 8601, UTC), level, logger, message, process (what
    this process is: web, spark-worker, worker, beat, consumer, else its command), host, pid,
    the context fields that are set, what else the call passed in `extra`, and a traceback as
    the text field `exc_info`."""

    def __init__(self, *, process_name="python"):
        # Django's request (and the dev server's socket) passed with some records: their repr
        # says nothing the line does not.
        super().__init__(reserved_attrs=[*RESERVED_ATTRS, *FIELDS, "request"])
        self.process_name = process_name
        self.host = socket.gethostname()

    def add_fields(self, log_data, record, message_dict):
        log_data["time"] = (
            datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )
        log_data["level"] = record.levelname
        log_data["logger"] = record.name
        log_data["message"] = record.message
        log_data["process"] = self.process_name
        log_data["host"] = self.host
        log_data["pid"] = record.process
        for name in FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                log_data[name] = value
        super().add_fields(log_data, record, message_dict)
