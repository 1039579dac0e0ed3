"""The contract between the engine and a queue's handler.

A handler is a plain callable named by a dotted path, e.g. ``workers.demo.handlers.orders``. It
receives one Message and returns normally on success (or returns a Deferred, resolved later). To
say the message can never succeed (R6), it raises PermanentFailure; any other exception is a
transient failure and the message is retried by the queue's backoff schedule (R5), or later when
the handler raised TransientFailure with a `retry_after` (a receiver's Retry-After). A handler that
ends its process (``os._exit``, abort, out of memory) is a crash (R7, R10): the engine runs
handlers in an isolated child process, so the crash takes down one isolation batch, never the
delivery run.
"""

import importlib
import json
import math


class PermanentFailure(Exception):
    """Raised by a handler when a message can never be processed (validation error, unknown
    reference). The message is not retried: it is quarantined or returned to its sender,
    as the queue's ``on_permanent`` says.

    `exception_type` and `stack` replace the ones the engine would record (the class name and
    this traceback) when the failure happened elsewhere: a message that arrives dead-lettered
    carries its own consumer's exception, and the failure groups should show that one."""

    def __init__(self, *args, exception_type=None, stack=None):
        super().__init__(*args)
        self.exception_type = exception_type
        self.stack = stack


# A receiver's word parks a message for a week at most: one that answers "Retry-After: 99999999"
# by mistake must not hide it for years (nor overflow a timestamp).
RETRY_AFTER_LIMIT = 7 * 24 * 3600


class TransientFailure(Exception):
    """A failure that may pass, as any exception but PermanentFailure is; raised when the handler
    knows the earliest moment worth trying again (an HTTP receiver's Retry-After).

    `retry_after` is in seconds from the failure. The message waits for the later of that and
    the queue's backoff (R5): a receiver that asks for an hour is not called again in a minute,
    and one that asks for a second does not make the queue retry faster than it was set to.
    Anything but a number of seconds >= 0 is ignored, and more than RETRY_AFTER_LIMIT counts as
    that limit."""

    def __init__(self, *args, retry_after=None):
        super().__init__(*args)
        self.retry_after = retry_after_seconds(retry_after)


def retry_after_seconds(value):
    """`value` as a float of seconds from 0 to RETRY_AFTER_LIMIT, or None when it is no number of
    seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if math.isnan(value) or value < 0:
        return None
    return float(min(value, RETRY_AFTER_LIMIT))


class Deferred:
    """What a handler returns when a call's outcome is known only later: a publish waiting for
    the broker's confirm, so that a thousand publishes wait for their confirms together instead
    of one after the other.

    `settle` is a callable of the handler. The engine calls it once the batch's calls are made,
    and it must resolve every Deferred it handed out: `done()`, or `fail(exc)` with a
    PermanentFailure or any other exception (transient), as if the call had raised it. A handler
    may resolve some earlier, as confirms arrive. One left unresolved is a transient failure,
    and a batch whose process dies before it settles leaves its deferred messages unfinished:
    they are delivered again, as messages that had not started (R2)."""

    __slots__ = ("error", "settle", "settled")

    def __init__(self, settle):
        self.settle = settle
        self.error = None
        self.settled = False

    def done(self):
        self.settled = True

    def fail(self, exc):
        self.error = exc
        self.settled = True


class OutcomeUnknown(Exception):
    """A deferred call that its handler never resolved."""


class HandlerImportError(ValueError):
    """The dotted path does not name an importable callable."""


class Message:
    """One message as its handler sees it. Headers are parsed from their JSON text on first
    use: most handlers never look at them, and the engine calls handlers millions of times."""

    __slots__ = (
        "_headers",
        "_headers_json",
        "attempt",
        "body",
        "content_type",
        "conversation_id",
        "delivery_count",
        "enqueued_at",
        "id",
        "queue",
        "redrive_target",
        "sender",
    )

    def __init__(
        self,
        *,
        id,
        queue,
        body,
        content_type,
        headers=None,
        headers_json=None,
        conversation_id=None,
        sender=None,
        enqueued_at=None,
        delivery_count=0,
        attempt=1,
        redrive_target=None,
    ):
        self.id = id
        self.queue = queue
        self.body = body
        self.content_type = content_type
        self._headers = headers
        self._headers_json = headers_json
        self.conversation_id = conversation_id
        self.sender = sender
        self.enqueued_at = enqueued_at
        self.delivery_count = delivery_count
        self.attempt = attempt
        # A reprocess's own target (JSON text), which only the request that wrote this version
        # of the message could set (workers.lake.schema): the sinks read it, never a header.
        self.redrive_target = redrive_target

    @property
    def headers(self):
        if self._headers is None:
            self._headers = json.loads(self._headers_json) if self._headers_json else {}
        return self._headers

    def text(self, encoding="utf-8"):
        return self.body.decode(encoding)

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"Message(id={self.id!r}, queue={self.queue!r}, {len(self.body)} bytes)"


def configurable(factory):
    """Mark `factory` as a configurable handler: the engine calls it once per process with the
    queue's ``handler_options`` as keyword arguments, and calls what it returns for each message.
    It must not connect to anything itself (queues are validated by building their handler)."""
    factory.configurable = True
    return factory


def handler_build(path, options=None):
    """The callable that handles a queue's messages: `path` itself, or what the configurable
    factory it names returns for `options`. Raises HandlerImportError when unusable."""
    target = load_handler(path)
    if getattr(target, "configurable", False):
        try:
            handler = target(**(options or {}))
        except (TypeError, ValueError) as exc:
            raise HandlerImportError(f"{path!r} refused its handler_options: {exc}") from exc
        if not callable(handler):
            raise HandlerImportError(f"{path!r} did not return a callable")
        return handler
    if options:
        raise HandlerImportError(f"{path!r} takes no handler_options")
    return target


def load_handler(path):
    """Import ``package.module.callable`` and return the callable, or raise HandlerImportError."""
    if not isinstance(path, str) or "." not in path:
        raise HandlerImportError(f"{path!r} is not a dotted path such as 'package.module.function'")
    module_name, _, attr = path.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time error makes the handler unusable
        raise HandlerImportError(f"cannot import module {module_name!r}: {exc}") from exc
    handler = getattr(module, attr, None)
    if handler is None:
        raise HandlerImportError(f"module {module_name!r} has no attribute {attr!r}")
    if not callable(handler):
        raise HandlerImportError(f"{path!r} is not callable")
    return handler
