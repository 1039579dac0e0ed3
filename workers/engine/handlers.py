"""The contract between the engine and a queue's handler.

A handler is a plain callable named by a dotted path, e.g. ``workers.demo.handlers.orders``. It
receives one Message and returns normally on success. To say the message can never succeed (R6),
it raises PermanentFailure; any other exception is a transient failure and the message is retried
by the queue's backoff schedule (R5). A handler that ends its process (``os._exit``, abort, out of
memory) is a crash (R7, R10): the engine runs handlers in an isolated child process, so the crash
takes down one isolation batch, never the delivery run.
"""

import importlib
import json


class PermanentFailure(Exception):
    """Raised by a handler when a message can never be processed (validation error, unknown
    reference). The message is not retried: it is quarantined or returned to its sender,
    as the queue's ``on_permanent`` says."""


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
