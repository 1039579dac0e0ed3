"""A NATS connection as the source and the sink open it: nats-py is asyncio, so each link runs a
private event loop of its own, only while one of its methods runs, and each method is
synchronous. The URL is read from the environment and never written in an error."""

import asyncio
import contextlib
import os
import re
from urllib.parse import urlsplit

import nats
import nats.errors
import nats.js.errors

from workers.brokers.base import SourceDown
from workers.redaction import url_secrets

CONNECT_TIMEOUT = 10.0
# A JetStream API request (stream info, a message get, a publish) answered after this long is a
# broken link: the loop reconnects and the unacknowledged advisories come back.
REQUEST_TIMEOUT = 10.0
CLOSE_TIMEOUT = 2.0
# NATS names used in subjects or as a stream's or consumer's name: no '.', wildcard, space or
# path separator (nats-server refuses them; a '.' would also split a subject's tokens).
NAME_RE = re.compile(r"^[^.*>\s/\\]{1,200}$")


class Loop:
    """A private event loop, run only while a method of its owner waits on it."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()

    def run(self, coroutine, timeout):
        return self.loop.run_until_complete(asyncio.wait_for(coroutine, timeout))

    def close(self):
        with contextlib.suppress(Exception):
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        with contextlib.suppress(Exception):
            self.loop.close()


def where_of(url):
    """host:port of a NATS URL, and the strings no error text may show (the URL, its user and
    password: a token is given as the user)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "localhost", parts.port or 4222
    except ValueError:
        return "an unreadable URL", (url,)
    return f"{host}:{port}", url_secrets(url, path=False)


def has_nats_scheme(url):
    """Whether the URL starts with nats:// or tls://, the schemes nats-py connects with."""
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        scheme = ""
    return scheme in ("nats", "tls")


def check_url(url, url_env):
    if not url:
        raise SourceDown(f"the environment variable {url_env} (the NATS server's URL) is not set")
    if not has_nats_scheme(url):
        raise SourceDown(f"the URL in {url_env} must start with nats:// or tls://")


async def connect(url, name, *, timeout=CONNECT_TIMEOUT):
    """A connection that is never re-established: a lost one ends the link, and the source loop
    (or the sink's retry) opens a new one; nothing waits on a reconnection that may never come.
    Raises the error of the attempt (a refused connection, a refused login)."""
    errors = []

    async def quiet(exc):
        # nats-py logs every error with its traceback; the link raises what matters itself.
        errors.append(exc)

    try:
        return await nats.connect(
            url,
            name=name,
            connect_timeout=timeout,
            allow_reconnect=False,
            # nats-py tries a server once more than this before it gives up (0: for ever).
            max_reconnect_attempts=1,
            reconnect_time_wait=0.2,
            error_cb=quiet,
        )
    except nats.errors.NoServersError:
        if errors:
            raise errors[-1] from None
        raise


def describe(exc):
    if isinstance(exc, OSError) and exc.errno:
        return os.strerror(exc.errno)
    if isinstance(exc, nats.js.errors.APIError) and exc.description:
        return f"({exc.code}) {exc.description}"
    # nats-py's errors mostly say only "nats: " and their class name says the rest.
    text = str(exc)
    if not text or text == "nats: ":
        return exc.__class__.__name__
    return f"{exc.__class__.__name__}: {text}"
