"""The demo's NATS JetStream side: a shipments stream whose label service gives up on what it
cannot take, and whose dead letters Antidote drains (workers/demo/nats.yaml).

JetStream keeps no dead-letter queue: a message its consumer gives up on stays in the stream,
and the server publishes an advisory naming it (workers/brokers/nats/source.py). `demo_dead_letters`
creates the demo stream, the label service's consumer (max_deliver 3) and the stream that
captures the advisories, as the source creates it, but now: an advisory published while nobody
captures it is lost, and the sources process starts after the feed. It then publishes a fixed
set of shipments and plays the label service once, for well under a second: it naks every
shipment it can read (JetStream delivers it again until max_deliver, then gives up:
MAX_DELIVERIES) and terminates the unreadable ones (AckTerm: MSG_TERMINATED).

As in workers/demo/rabbitmq.py, whether to feed is the caller's database's say (`fed_here`): a
new database (var/ deleted to start over) is fed again, although the stream still holds the
shipments of the first feed. Only advisories still waiting in the capture stream (not drained
yet: a drained one is acknowledged, and the capture stream keeps only what waits) are left to
the new database instead.
"""

import asyncio
import json
import os
import time
from dataclasses import dataclass

import nats
import nats.errors
import nats.js.errors
from nats.js import api

from workers.brokers.nats.connection import has_nats_scheme, where_of
from workers.brokers.nats.source import (
    advisory_subjects,
    capture_stream_config,
    capture_stream_name,
    connect,
)
from workers.demo.feed import DemoOff, Feed, queues_document

QUEUES_FILE = os.path.join(os.path.dirname(__file__), "nats.yaml")
URL_ENV = "ANTIDOTE_NATS_URL"
# What `make run` sets URL_ENV to when it is not set (the Makefile's `run` target).
MAKE_RUN_URL = "nats://127.0.0.1:4222"
SHIPMENTS = 60
MAX_DELIVER = 3
CARRIERS = ("dhl", "ups", "postnl")
START_HINT = "start `nats-server -js`"


@dataclass(frozen=True)
class Names:
    """Where the demo lives on the server. Tests give names of their own: a NATS server has no
    virtual host to keep them apart."""

    stream: str = "ANTIDOTE_DEMO_SHIPMENTS"
    subject: str = "antidote.demo.shipments"  # a shipment goes to <subject>.<carrier>
    consumer: str = "shipping-labels"

    @property
    def capture(self):
        return capture_stream_name(self.stream)


NAMES = Names()


def demo_queues(names=NAMES):
    """workers/demo/nats.yaml, its source draining the stream `names` says."""
    return queues_document(QUEUES_FILE, broker_queue=names.stream)


def fed_said(names, count):
    """What seed_demo says of a feed of `count` shipments."""
    return f"{count} shipments given up on by consumer {names.consumer} of stream {names.stream}"


def server_where(url):
    """host:port of a NATS URL: what messages may say, never the user or password."""
    return where_of(url)[0]


def _shipment(n):
    carrier = CARRIERS[n % len(CARRIERS)]
    headers = {
        "Content-Type": "application/json",
        "Shipment-Id": f"demo-shipment-{n:04d}",
        "Order-Id": f"demo-order-{n:04d}",
        "Tenant": "demo",
    }
    if n % 5 == 0:
        # Cut off by the web shop's bug: the label service cannot read it, and says so (AckTerm).
        body = b'{"shipment": ' + str(n).encode() + b', "carrier": "' + carrier.encode()
    else:
        body = json.dumps(
            {"shipment": n, "carrier": carrier, "weight_kg": 0.5 + n % 7, "country": "NL"}
        ).encode()
    return carrier, body, headers


def demo_dead_letters(url, *, fed_here, names=NAMES, timeout=5.0):
    """Feed the demo stream, unless `fed_here` (the caller's database says it was fed for it)
    or advisories are still waiting in the capture stream. Returns a Feed; DemoOff when the
    server does not answer or has no JetStream, its reason ending with what to do (seed_demo
    adds "and run make run again")."""
    if not has_nats_scheme(url):
        raise DemoOff(f"the URL in {URL_ENV} must start with nats:// or tls://: correct it")
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(
            asyncio.wait_for(_feed(url, names, fed_here, timeout), 4 * timeout)
        )
    except (OSError, TimeoutError, nats.errors.Error) as exc:
        raise DemoOff(_why(exc, url)) from None
    finally:
        loop.close()


def _why(exc, url):
    """Why the demo is off, ending with what to do: seed_demo adds "and run make run again"."""
    where = server_where(url)
    if isinstance(exc, nats.js.errors.ServiceUnavailableError | nats.errors.NoRespondersError):
        return f"the NATS server at {where} has no JetStream; {START_HINT}"
    if isinstance(exc, nats.errors.AuthorizationError):
        return f"the NATS server at {where} refused the login: check {URL_ENV}"
    if isinstance(exc, nats.js.errors.APIError):
        return (
            f"JetStream at {where} refused the demo ({exc.code}: {exc.description}); see "
            "docs/guides/nats.md"
        )
    return f"nothing answers at {where}; {START_HINT}"


async def _feed(url, names, fed_here, timeout):
    # nats-py would log each error with its traceback: the one line seed_demo prints says it.
    nc = await connect(url, "antidote demo", timeout=timeout)
    try:
        js = nc.jetstream(timeout=timeout)
        await _stream_ensure(
            js,
            api.StreamConfig(
                name=names.stream, subjects=[f"{names.subject}.>"], storage=api.StorageType.FILE
            ),
        )
        await _stream_ensure(
            js, capture_stream_config(names.capture, advisory_subjects(names.stream))
        )
        waiting = (await js.stream_info(names.capture)).state.messages
        try:
            await js.consumer_info(names.stream, names.consumer)
        except nats.js.errors.NotFoundError:
            await js.add_consumer(
                names.stream,
                config=api.ConsumerConfig(
                    durable_name=names.consumer,
                    ack_policy=api.AckPolicy.EXPLICIT,
                    deliver_policy=api.DeliverPolicy.ALL,
                    max_deliver=MAX_DELIVER,
                    # The service naks at once; a feed cut short (Ctrl-C) gets its shipments
                    # back at the next pull after this.
                    ack_wait=30,
                ),
            )
        if fed_here or waiting:
            return Feed(fed=0, waiting=waiting)
        for n in range(SHIPMENTS):
            carrier, body, headers = _shipment(n)
            await js.publish(f"{names.subject}.{carrier}", body, headers=headers)
        await _label_service_gives_up(js, names, SHIPMENTS, timeout=timeout)
        return Feed(fed=SHIPMENTS, waiting=0)
    finally:
        await nc.close()


async def _stream_ensure(js, config):
    """Create a stream unless it exists: an existing one (an earlier run's) is used as it is."""
    try:
        await js.stream_info(config.name)
    except nats.js.errors.NotFoundError:
        await js.add_stream(config)


async def _label_service_gives_up(js, names, count, *, timeout):
    """The label service, in the middle of a bad deploy: it naks every shipment it can read, so
    JetStream delivers each again until max_deliver, and terminates the unreadable ones. Until
    nothing is left to deliver and the capture stream holds `count` advisories, at most
    `timeout` seconds. (Whatever else the stream holds for the service, such as shipments
    redriven since an earlier feed, it fails too: the service is still broken.)"""
    sub = await js.pull_subscribe_bind(durable=names.consumer, stream=names.stream)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                messages = await sub.fetch(batch=count, timeout=0.2)
            except TimeoutError:  # nats-py's own TimeoutError is one too
                # JetStream gave up on everything it had (a pull with nothing to deliver is
                # when it says so): done once every advisory is captured.
                if (await js.stream_info(names.capture)).state.messages >= count:
                    return
                continue
            for msg in messages:
                try:
                    json.loads(msg.data)
                except ValueError:
                    await msg.term()
                else:
                    await msg.nak()
    finally:
        await sub.unsubscribe()
