"""The demo's Redis Streams side: an invoices stream whose billing service never acknowledges
what it reads, and whose dead letters Antidote claims (workers/demo/redis_streams.yaml).

Redis keeps no dead-letter queue: an entry a consumer fails on stays in its group's pending
list, its delivery counter growing with each delivery (workers/brokers/redis_streams/source.py).
`demo_dead_letters` creates the stream and its group, appends a fixed set of invoices and plays
the billing service once, in a few milliseconds: it reads them, fails, and reads its own pending
ones again (as a consumer that retries on start does) until each was delivered as often as the
source's `min_deliveries` asks. It never acknowledges them: once idle for the source's
`min_idle_ms`, they are dead letters.

As in workers/demo/rabbitmq.py, whether to feed is the caller's database's say (`fed_here`): a
new database (var/ deleted to start over) is fed again, although the stream still holds the
invoices of the first feed. Only entries still pending in the group (not drained yet: a drained
one is acknowledged) are left to the new database instead.
"""

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

import redis

from workers.brokers.redis_streams.connection import unretried_client
from workers.demo.feed import DemoOff, Feed, queues_document

QUEUES_FILE = os.path.join(os.path.dirname(__file__), "redis_streams.yaml")
URL_ENV = "ANTIDOTE_REDIS_STREAMS_URL"
# What `make run` sets URL_ENV to when it is not set (the Makefile's `run` target): database 3,
# apart from Celery's 0, the tests' 7 and the soak benchmark's 11.
MAKE_RUN_URL = "redis://127.0.0.1:6379/3"
INVOICES = 40
START_HINT = "start `redis-server`"


@dataclass(frozen=True)
class Names:
    """Where the demo lives in Redis. Tests give a stream of their own."""

    stream: str = "antidote:demo:invoices"
    group: str = "billing"
    consumer: str = "billing-worker"


NAMES = Names()


def demo_queues(names=NAMES):
    """workers/demo/redis_streams.yaml, its source draining the stream and group `names` says."""
    return queues_document(QUEUES_FILE, broker_queue=names.stream, options={"group": names.group})


def min_deliveries():
    """How often the billing service must have had an entry before the source takes it."""
    (source,) = queues_document(QUEUES_FILE)["sources"]
    return source["options"]["min_deliveries"]


def fed_said(names, count):
    """What seed_demo says of a feed of `count` invoices."""
    return f"{count} invoices left unacknowledged by group {names.group} of stream {names.stream}"


def server_where(url):
    """host:port/db of a Redis URL: what messages may say, never the password."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "localhost", parts.port or 6379
    except ValueError:
        return "an unreadable URL"
    return f"{host}:{port}/{parts.path.strip('/') or '0'}"


def _invoice(n):
    """An invoice's fields. One in four comes from the old shop, which writes no body field:
    the source makes its body the JSON object of its fields."""
    if n % 4 == 3:
        return {
            "invoice": f"demo-invoice-{n:04d}",
            "order": f"demo-order-{n:04d}",
            "amount": f"{19.5 + n:.2f}",
            "currency": "EUR",
        }
    body = f'{{"invoice": {n}, "amount": "{7.25 * (n % 9 + 1):.2f}", "currency": "EUR"}}'
    return {
        "body": body,
        "content-type": "application/json",
        "invoice": f"demo-invoice-{n:04d}",
        "tenant": "demo",
    }


def demo_dead_letters(url, *, fed_here, names=NAMES, timeout=5.0):
    """Feed the demo stream, unless `fed_here` (the caller's database says it was fed for it) or
    entries are still pending in the group. Returns a Feed; DemoOff when Redis does not answer,
    its reason ending with what to do (seed_demo adds "and run make run again")."""
    where = server_where(url)
    try:
        client = unretried_client(url, connect_timeout=timeout, timeout=timeout)
    except (ValueError, TypeError):
        # The parser's message may quote the URL, password and all.
        raise DemoOff(f"the URL in {URL_ENV} cannot be read: correct it") from None
    try:
        return _feed(client, names, fed_here)
    except redis.AuthenticationError:
        raise DemoOff(f"Redis at {where} refused the login: check {URL_ENV}") from None
    except redis.ResponseError as exc:
        raise DemoOff(
            f"Redis at {where} refused the demo ({exc}); see docs/guides/redis-streams.md"
        ) from None
    except (redis.RedisError, OSError):
        raise DemoOff(f"nothing answers at {where}; {START_HINT}") from None
    finally:
        client.close()


def _feed(client, names, fed_here):
    try:
        client.xgroup_create(names.stream, names.group, id="$", mkstream=True)
    except redis.ResponseError as exc:
        if not str(exc).startswith("BUSYGROUP"):
            raise
    waiting = client.xpending(names.stream, names.group)["pending"]
    if fed_here or waiting:
        return Feed(fed=0, waiting=waiting)
    pipe = client.pipeline(transaction=False)
    for n in range(INVOICES):
        pipe.xadd(names.stream, _invoice(n))
    pipe.execute()
    _billing_service_fails(client, names, min_deliveries())
    return Feed(fed=INVOICES, waiting=0)


def _billing_service_fails(client, names, deliveries):
    """The billing service, with its ledger locked: it reads the new invoices, fails on each
    without acknowledging it, and reads its own pending ones again, `deliveries` times in all."""
    client.xreadgroup(names.group, names.consumer, {names.stream: ">"})
    for _ in range(deliveries - 1):
        # Its own history, from the start: each read adds one to every entry's counter.
        client.xreadgroup(names.group, names.consumer, {names.stream: "0"})
