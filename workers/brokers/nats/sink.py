"""The NATS JetStream sink: `publisher` is the configurable handler of a redrive queue. It
publishes each message to its original subject (or the queue's `subject`, or the request's own
target) with JetStream's publish acknowledgement and a Nats-Msg-Id (`record.dedupe_id`), so a
redrive retried after an outage is stored once by the stream.

A sink is used by one process: handlers run in forked children, so it connects lazily in the
process that publishes.
"""

import asyncio
import contextlib
import os
import time

import nats
import nats.errors
import nats.js.errors

from workers.brokers.base import (
    LinkedSink,
    NoRedriveTarget,
    RedriveConnectionFailed,
    RedriveNoStream,
    RedriveNotAcknowledged,
    SourceDown,
    env_name_checked,
    redrive_destination,
    seconds_checked,
    window_checked,
)
from workers.brokers.nats import record as M
from workers.brokers.nats.connection import (
    CLOSE_TIMEOUT,
    CONNECT_TIMEOUT,
    NAME_RE,
    Loop,
    check_url,
    connect,
    describe,
    where_of,
)
from workers.engine.handlers import PermanentFailure, configurable
from workers.redaction import scrubbed

# Publishes handed to the event loop at once (see _PublishLink._send).
SEND_EVERY = 256


@configurable
def publisher(
    *, url_env="ANTIDOTE_NATS_URL", subject=None, stream=None, ack_timeout=30.0, window=1000
):
    """The redrive handler of one queue: publishes each message to `subject` when set, else to
    the subject it came from (the request's own target first: `redrive_destination`).
    `stream`, when set, is the only stream that may take the publishes (Nats-Expected-Stream).
    Connects at the first call, in the process that publishes."""
    env_name_checked("url_env", url_env)
    if subject is not None and not _usable_subject(subject):
        raise ValueError("subject must be a NATS subject with no wildcard or space")
    if stream is not None and (not isinstance(stream, str) or not NAME_RE.match(stream)):
        raise ValueError("stream must be a JetStream stream name")
    return NatsSink(
        url_env=url_env,
        subject=subject,
        stream=stream,
        ack_timeout=seconds_checked("ack_timeout", ack_timeout),
        window=window_checked(window),
    )


def _usable_subject(subject):
    return (
        isinstance(subject, str)
        and 0 < len(subject) <= 1000
        and subject.isprintable()
        and not any(c.isspace() for c in subject)
        and all(token and token not in ("*", ">") for token in subject.split("."))
    )


class NatsSink(LinkedSink):
    """Publishes are pipelined as redrive.py's are: each call queues its publish and returns a
    Deferred; the queued ones are written SEND_EVERY at a time, at most `window` wait for their
    acknowledgements at once, and `settle()`, called by the engine at the end of the batch,
    writes the rest, waits for their acknowledgements and closes the connection.

    Failures: a publish JetStream acknowledged is a success (a duplicate acknowledgement too: the
    stream already holds that redrive). One it refused (a full stream, a wrong expected stream),
    one no stream stores, and one whose acknowledgement never came (connection lost, timeout) are
    transient: retried by the queue's backoff, with the same Nats-Msg-Id, so the stream stores it
    once. A message that cannot be published as it is (no subject known, headers NATS cannot
    carry) is a permanent failure."""

    def __init__(self, *, url_env, subject, stream, ack_timeout, window):
        self.url_env = url_env
        self.subject = subject
        self.stream = stream
        self.ack_timeout = ack_timeout
        self.window = window
        super().__init__()

    def __call__(self, message):
        headers = message.headers
        target = redrive_destination(
            message,
            keys=("subject",),
            configured={"subject": self.subject},
            origin=lambda: M.origin_subject(headers),
        )
        if not target:
            raise NoRedriveTarget(
                "no nats-subject header says where it came from and the queue sets no subject"
            )
        subject = target["subject"]
        if not _usable_subject(subject):
            raise PermanentFailure(f"{subject!r} is not a NATS subject to publish to")
        try:
            out = M.publish_headers(headers, content_type=message.content_type)
        except ValueError as exc:
            raise PermanentFailure(str(exc)) from exc
        body = bytes(message.body)
        out["Nats-Msg-Id"] = M.dedupe_id(message.id, subject, body)
        return self._publish(subject, body, out)

    def _connect(self):
        return _PublishLink.open(self.url_env, self.stream, self.ack_timeout, self.window)


class _PublishLink:
    def __init__(self, loop, nc, where, stream, ack_timeout, window):
        self.pid = os.getpid()
        self.loop = loop
        self.nc = nc
        self.js = nc.jetstream(timeout=ack_timeout, publish_async_max_pending=window)
        self.where = where
        self.stream = stream
        self.ack_timeout = ack_timeout
        self.window = window
        self.pending = {}  # future -> (deferred, subject): written, waiting for the ack
        self.queued = []  # (subject, body, headers, deferred): not written yet
        self.broken = None

    @classmethod
    def open(cls, url_env, stream, ack_timeout, window):
        url = os.environ.get(url_env)
        if not url:
            raise RedriveConnectionFailed(f"{url_env} is not set")
        try:
            check_url(url, url_env)
        except SourceDown as exc:
            raise RedriveConnectionFailed(str(exc)) from None
        where, secrets = where_of(url)
        loop = Loop()
        try:
            nc = loop.run(
                connect(url, f"antidote redrive (pid {os.getpid()})"), CONNECT_TIMEOUT + 1
            )
        except Exception as exc:
            loop.close()
            # What the server said may quote the CONNECT it was sent, password and all.
            raise RedriveConnectionFailed(
                scrubbed(f"cannot connect to NATS at {where}: {describe(exc)}", secrets)
            ) from None
        return cls(loop, nc, where, stream, ack_timeout, window)

    def publish(self, subject, body, headers, deferred):
        """Queue one publish; they go out together (`_send`), every SEND_EVERY and at the end."""
        if self.broken is not None:
            raise type(self.broken)(str(self.broken))
        self.queued.append((subject, body, headers, deferred))
        if len(self.queued) >= SEND_EVERY or len(self.queued) + len(self.pending) >= self.window:
            self._send()
            if len(self.pending) >= self.window:
                self._wait(lambda: len(self.pending) < self.window)

    def _send(self):
        """Write the queued publishes in one turn of the loop: a turn per message would cost
        more than the publish itself."""
        queued, self.queued = self.queued, []
        if not queued:
            return
        if self.broken is not None:
            for *_, deferred in queued:
                deferred.fail(type(self.broken)(str(self.broken)))
            return

        written = 0  # how many of `queued` are written or failed already

        async def send():
            nonlocal written
            for subject, body, headers, deferred in queued:
                try:
                    future = await self.js.publish_async(
                        subject, body, headers=headers, stream=self.stream
                    )
                except (nats.errors.BadHeaderError, nats.errors.BadSubjectError) as exc:
                    deferred.fail(
                        PermanentFailure(f"NATS cannot carry this message: {describe(exc)}")
                    )
                except nats.errors.MaxPayloadError:
                    deferred.fail(
                        PermanentFailure(
                            f"the body is larger than the NATS server at {self.where} takes "
                            "(max_payload)"
                        )
                    )
                else:
                    self.pending[future] = (deferred, subject)
                    future.add_done_callback(self._on_done)
                written += 1

        try:
            self.loop.run(send(), self.ack_timeout)
        except Exception as exc:
            # The connection is lost, or the server stopped reading and nats-py's buffer is
            # full: what was written fails with the rest, as unacknowledged.
            lost = (
                self._not_acknowledged()
                if isinstance(exc, TimeoutError)
                else RedriveConnectionFailed(
                    f"connection to NATS at {self.where} lost before the publish: {describe(exc)}"
                )
            )
            for *_, deferred in queued[written:]:
                deferred.fail(lost)
            self._give_up(lost)

    def _on_done(self, future):
        entry = self.pending.pop(future, None)
        if entry is None:
            return
        deferred, subject = entry
        if future.cancelled():
            deferred.fail(self._not_acknowledged())
            return
        exc = future.exception()
        if exc is None:
            deferred.done()
        elif isinstance(exc, nats.js.errors.NoStreamResponseError):
            deferred.fail(
                RedriveNoStream(f"no JetStream stream at {self.where} stores subject {subject!r}")
            )
        elif isinstance(exc, nats.js.errors.APIError):
            deferred.fail(
                RedriveNotAcknowledged(
                    f"JetStream at {self.where} refused the publish to {subject!r}: {describe(exc)}"
                )
            )
        else:
            deferred.fail(
                RedriveConnectionFailed(
                    f"the publish to {subject!r} at {self.where} failed: {describe(exc)}"
                )
            )

    def wait_all(self):
        self._send()
        self._wait(lambda: not self.pending)

    def _wait(self, enough):
        """Run the loop until `enough()`, the connection is lost or `ack_timeout` passes; then
        fail what is still unacknowledged."""
        deadline = time.monotonic() + self.ack_timeout

        async def until():
            while not enough() and not self.nc.is_closed and time.monotonic() < deadline:
                await asyncio.wait(list(self.pending), timeout=0.05)

        with contextlib.suppress(Exception):
            self.loop.loop.run_until_complete(until())
        if not enough():
            if self.nc.is_closed:
                self._give_up(
                    RedriveConnectionFailed(
                        f"connection to NATS at {self.where} lost before JetStream acknowledged"
                    )
                )
            else:
                self._give_up(self._not_acknowledged())

    def _not_acknowledged(self):
        return RedriveNotAcknowledged(
            f"JetStream at {self.where} did not acknowledge the publish within "
            f"{self.ack_timeout:g} s"
        )

    def _give_up(self, exc):
        pending, self.pending = self.pending, {}
        for deferred, _ in pending.values():
            deferred.fail(exc)
        if self.broken is None:
            self.broken = exc

    def close(self):
        if not self.nc.is_closed:
            with contextlib.suppress(Exception):
                self.loop.run(self.nc.close(), CLOSE_TIMEOUT)
        self.loop.close()
        if self.broken is None:
            self.broken = RedriveConnectionFailed(f"connection to NATS at {self.where} closed")
