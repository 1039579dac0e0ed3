"""A Redis connection as the source and the sink open it. URLs are read from the environment
when connecting and never kept; errors name host:port/db only."""

import os
from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from workers.brokers.base import SourceDown
from workers.redaction import url_secrets

DEFAULT_URL_ENV = "ANTIDOTE_REDIS_STREAMS_URL"
CONNECT_TIMEOUT = 10.0
# Every command's reply comes within this, or the connection is taken for lost.
SOCKET_TIMEOUT = 30.0
# How often an idle source asks for new poison entries: Redis says nothing when a counter grows.


def where_of(url):
    """host:port/db of a Redis URL, for messages: never the URL (it may hold the password)."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme == "unix":
            return f"unix:{parts.path}"
        host, port = parts.hostname or "localhost", parts.port or 6379
    except ValueError:
        return "an unreadable URL"
    db = parts.path.strip("/") or "0"
    return f"{host}:{port}/{db}"


def url_check(url, url_env):
    """SourceDown unless `url` is a Redis URL redis-py reads; its message never quotes it."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        raise SourceDown(f"the URL in {url_env} cannot be read") from None
    if scheme not in ("redis", "rediss", "unix"):
        raise SourceDown(
            f"the URL in {url_env} must start with redis://, rediss:// or unix:// "
            "(redis://user:password@host:port/db)"
        )


def unretried_client(url, *, connect_timeout, timeout, **options):
    """A client without redis-py's own retries: a command that failed is retried by the caller,
    who knows whether doing it again is safe. Raises ValueError or TypeError, whose message may
    quote the URL, when redis-py cannot read it."""
    return redis.Redis.from_url(
        url,
        socket_connect_timeout=connect_timeout,
        socket_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
        **options,
    )


def client_for(url, url_env, *, timeout=SOCKET_TIMEOUT):
    """A client for one thread (unretried_client)."""
    url_check(url, url_env)
    try:
        client = unretried_client(
            url,
            connect_timeout=CONNECT_TIMEOUT,
            timeout=timeout,
            client_name=f"antidote-{os.getpid()}",
        )
    except (ValueError, TypeError):
        # The parser's message may quote the URL, password and all.
        raise SourceDown(f"the URL in {url_env} cannot be read") from None
    # Replies as Redis sends them: redis-py would turn an entry's fields into a dict, losing a
    # name given twice and the order.
    for command in ("XPENDING", "XCLAIM", "XRANGE"):
        client.set_response_callback(command, as_sent)
    return client


def as_sent(response, **options):
    return response


def secrets_of(url):
    # The URL, its user and password, its query (redis-py reads ?password= there too).
    return url_secrets(url, path=False)


def as_text(value):
    return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else str(value)


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)
