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
from dataclasses import dataclass, field
from datetime import datetime


class PermanentFailure(Exception):
    """Raised by a handler when a message can never be processed (validation error, unknown
    reference). The message is not retried: it is quarantined or returned to its sender,
    as the queue's ``on_permanent`` says."""


class HandlerImportError(ValueError):
    """The dotted path does not name an importable callable."""


@dataclass(frozen=True)
class Message:
    id: str
    queue: str
    body: bytes
    content_type: str
    headers: dict = field(default_factory=dict)
    conversation_id: str | None = None
    sender: str | None = None
    enqueued_at: datetime | None = None
    delivery_count: int = 0
    attempt: int = 1

    def text(self, encoding="utf-8"):
        return self.body.decode(encoding)

    def json(self):
        return json.loads(self.body)


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
