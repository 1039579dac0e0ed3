"""The Redis Streams sink, the handler `workers.brokers.redis_streams.publisher`.

The sink appends (XADD) the message to its stream with its fields as received and the Antidote
message id in a field (`id_field`), so a consumer can drop a copy it has seen. Where it goes is
the request's own target (key "stream"), else the queue's `stream` option, else the stream the
entry was drained from. Appends are pipelined: each call queues an XADD and returns a Deferred,
and the pipeline is sent every `window` calls and when the engine settles the batch. An append
whose reply was lost (connection broken while the pipeline was out) is a transient failure and is
sent again: only such an append can reach the stream twice, and the id field says so.

Processes: the engine builds the handler in one process and forks a child per batch to call it,
so a connection is opened lazily by the process that publishes, never inherited. URLs are read
from the environment when connecting and never kept; errors name host:port/db only.
"""

import contextlib
import os

import redis

from workers.brokers.base import (
    ConnectFailures,
    NoRedriveTarget,
    RedriveConnectionFailed,
    RedriveRefused,
    SourceDown,
    env_name_checked,
    redrive_destination,
    seconds_checked,
    window_checked,
)
from workers.brokers.redis_streams.connection import (
    DEFAULT_URL_ENV,
    SOCKET_TIMEOUT,
    client_for,
    secrets_of,
    where_of,
)
from workers.brokers.redis_streams.record import (
    STREAM_HEADER,
    FieldsUnreadable,
    fields_to_publish,
)
from workers.engine.handlers import Deferred, PermanentFailure, configurable
from workers.redaction import scrubbed


@configurable
def publisher(
    *,
    url_env=DEFAULT_URL_ENV,
    stream=None,
    id_field="antidote-message-id",
    body_field="body",
    timeout=SOCKET_TIMEOUT,
    window=1000,
):
    """The redrive handler of one queue (see the module docstring). Connects at the first send."""
    env_name_checked("url_env", url_env)
    if stream is not None and not (isinstance(stream, str) and stream):
        raise ValueError("stream must be a stream's key")
    for name, value in (("id_field", id_field), ("body_field", body_field)):
        if not (isinstance(value, str) and value):
            raise ValueError(f"{name} must name a field")
    return RedisStreamsSink(
        url_env=url_env,
        stream=stream,
        id_field=id_field,
        body_field=body_field,
        timeout=seconds_checked("timeout", timeout),
        window=window_checked(window),
    )


class RedisStreamsSink:
    def __init__(self, *, url_env, stream, id_field, body_field, timeout, window):
        self.url_env = url_env
        self.stream = stream
        self.id_field = id_field.encode("utf-8")
        self.body_field = body_field
        self.timeout = timeout
        self.window = window
        self._batch = None
        self._failures = ConnectFailures(RedriveConnectionFailed)
        # One object for every Deferred: the engine calls each distinct settle once.
        self._settle = self.settle

    def __call__(self, message):
        headers = message.headers
        destination = redrive_destination(
            message,
            keys=("stream",),
            configured={"stream": self.stream},
            origin=lambda: (
                {"stream": headers[STREAM_HEADER]} if headers.get(STREAM_HEADER) else None
            ),
        )
        if destination is None:
            raise NoRedriveTarget(
                "the message did not come from a Redis stream and neither the request nor the "
                "queue's handler options name a stream"
            )
        try:
            fields = fields_to_publish(
                headers=headers, body=bytes(message.body), body_field=self.body_field
            )
        except FieldsUnreadable as exc:
            raise PermanentFailure(str(exc)) from exc
        # The id of this Antidote message, in place of any earlier one (an entry redriven before).
        flat = []
        for name, value in fields:
            if name != self.id_field:
                flat += (name, value)
        flat += (self.id_field, message.id)
        batch = self._open_batch()
        deferred = Deferred(self._settle)
        batch.add(destination["stream"], flat, deferred)
        if len(batch.waiting) >= self.window:
            batch.send()
        return deferred

    def settle(self):
        """Send what this process queued, resolve its Deferreds, close its connection."""
        batch = self._batch
        if batch is None or batch.pid != os.getpid():
            return
        self._batch = None
        try:
            batch.send()
        finally:
            batch.close()
        if batch.failure is not None:
            self._failures.record(batch.failure)

    def _open_batch(self):
        pid = os.getpid()
        batch = self._batch
        if batch is not None and batch.pid == pid:
            return batch
        # A batch made by the parent of this process is the parent's: its socket is shared.
        self._failures.check()
        self._batch = _Batch(self.url_env, self.timeout)
        return self._batch


class _Batch:
    """The appends one process has queued and not yet sent, on its own connection."""

    def __init__(self, url_env, timeout):
        self.pid = os.getpid()
        self.url_env = url_env
        self.timeout = timeout
        self.client = None
        self.where = None
        self.secrets = ()  # what no reason may show: the URL, its user and password
        self.pipe = None
        self.waiting = []  # (stream, Deferred) per queued XADD, in order
        self.failure = None  # why the connection failed, when it did

    def add(self, stream, flat, deferred):
        if self.failure is not None:
            # The connection failed earlier in this batch: the rest fail at once, for the same
            # reason, rather than each wait for a connect.
            raise RedriveConnectionFailed(self.failure)
        if self.pipe is None:
            self._connect()
        self.pipe.execute_command("XADD", stream, "*", *flat)
        self.waiting.append((stream, deferred))

    def _connect(self):
        url = os.environ.get(self.url_env)
        if not url:
            raise RedriveConnectionFailed(f"{self.url_env} is not set")
        self.where = where_of(url)
        self.secrets = secrets_of(url)
        try:
            # No connection is made here: redis-py connects when the pipeline is sent.
            client = client_for(url, self.url_env, timeout=self.timeout)
        except SourceDown as exc:
            raise RedriveConnectionFailed(str(exc)) from None
        self.client = client
        self.pipe = client.pipeline(transaction=False)

    def send(self):
        waiting, self.waiting = self.waiting, []
        if not waiting:
            return
        try:
            replies = self.pipe.execute(raise_on_error=False)
        except (redis.RedisError, OSError) as exc:
            # Part of the pipeline may have been written and applied: its outcome is unknown.
            # (A server that refuses the handshake answers an error: redis-py raises it here.)
            # What the server said may quote the login it was sent: scrubbed.
            reason = scrubbed(
                f"connection to Redis at {self.where} failed before it answered the XADD: "
                f"{_describe(exc)}",
                self.secrets,
            )
            self.failure = reason
            for _, deferred in waiting:
                deferred.fail(RedriveConnectionFailed(reason))
            self._drop()
            return
        for (stream, deferred), reply in zip(waiting, replies, strict=True):
            if isinstance(reply, Exception):
                deferred.fail(
                    RedriveRefused(
                        f"Redis at {self.where} refused the XADD to stream '{stream}': "
                        + scrubbed(str(reply), self.secrets)
                    )
                )
            else:
                deferred.done()

    def _drop(self):
        client, self.client, self.pipe = self.client, None, None
        if client is not None:
            # A connection already gone cannot fail any further.
            with contextlib.suppress(Exception):
                client.close()

    def close(self):
        self._drop()


def _describe(exc):
    text = str(exc)
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__
