"""The demo's RabbitMQ side: a refunds queue whose consumer rejects what it cannot take, and
whose dead letters Antidote drains (workers/demo/rabbitmq.yaml).

`demo_dead_letters` declares the topology, publishes a fixed set of refund requests and plays the
refunds service once: it rejects the malformed ones (RabbitMQ dead-letters them with reason
"rejected") and leaves the stale ones to expire (reason "expired"). Whether to do so is the
caller's database's say (`fed_here`): `make run` twice does not double the demo, and a new
database (var/ deleted to start over) gets its refunds again, although the broker remembers
feeding an older one (a message in the marker queue). Only dead letters still waiting in the DLQ,
not drained yet, are left to the new database instead.
"""

import json
import os
import time
from urllib.parse import urlparse

import pika

from workers.demo.feed import Feed

QUEUES_FILE = os.path.join(os.path.dirname(__file__), "rabbitmq.yaml")
URL_ENV = "ANTIDOTE_AMQP_URL"
EXCHANGE = "antidote.demo"
WORK_QUEUE = "antidote.demo.refunds"
DEAD_LETTER_QUEUE = "antidote.demo.refunds.dlq"
ROUTING_KEY = "refund.requested"
MARKER_QUEUE = "antidote.demo.seeded"
REFUNDS = 120


def broker_where(url):
    """host:port/vhost of an AMQP URL: what messages may say, never the password."""
    parts = urlparse(url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 5672}{parts.path or '/'}"


def _refund(n):
    if n % 4 == 0:
        return b'{"refund": ' + str(n).encode() + b', "amount": "12,50"', "application/json"
    if n % 4 == 1:
        return json.dumps({"refund": n, "amount": "-3.00", "currency": "EUR"}).encode(), (
            "application/json"
        )
    return json.dumps({"refund": n, "amount": "9.99", "currency": "XTS"}).encode(), (
        "application/json"
    )


def demo_dead_letters(url, *, fed_here, timeout=5.0):
    """Feed the demo DLQ, unless `fed_here` (the caller's database says it was fed for it) or
    dead letters are still waiting there. Returns a Feed."""
    params = pika.URLParameters(url)
    params.socket_timeout = timeout
    params.blocked_connection_timeout = timeout
    connection = pika.BlockingConnection(params)
    try:
        channel = connection.channel()
        channel.exchange_declare(EXCHANGE, "direct", durable=True)
        waiting = channel.queue_declare(DEAD_LETTER_QUEUE, durable=True).method.message_count
        channel.queue_declare(
            WORK_QUEUE,
            durable=True,
            arguments={
                "x-dead-letter-exchange": "",
                "x-dead-letter-routing-key": DEAD_LETTER_QUEUE,
            },
        )
        channel.queue_bind(WORK_QUEUE, EXCHANGE, ROUTING_KEY)
        # A message in the marker queue says that the broker fed some database's demo once.
        marked = channel.queue_declare(MARKER_QUEUE, durable=True).method.message_count
        if fed_here or waiting:
            return Feed(fed=0, waiting=waiting)
        channel.confirm_delivery()
        for n in range(REFUNDS):
            body, content_type = _refund(n)
            stale = n % 10 == 9
            channel.basic_publish(
                EXCHANGE,
                ROUTING_KEY,
                body,
                pika.BasicProperties(
                    content_type=content_type,
                    delivery_mode=2,
                    message_id=f"demo-refund-{n:04d}",
                    correlation_id=f"demo-order-{n:04d}",
                    reply_to="refunds.replies",
                    app_id="shop-refunds",
                    timestamp=int(time.time()),
                    headers={"tenant": "demo", "attempt": 1},
                    # A stale refund waits past its time to live: RabbitMQ expires it.
                    expiration="1" if stale else None,
                ),
            )
        _refunds_service_rejects(channel)
        _dead_lettered_wait(channel, REFUNDS, timeout=timeout)
        if not marked:
            channel.basic_publish(
                "", MARKER_QUEUE, b"seeded", pika.BasicProperties(delivery_mode=2)
            )
        return Feed(fed=REFUNDS, waiting=0)
    finally:
        connection.close()


def _refunds_service_rejects(channel):
    """The refunds service, in the middle of a bad deploy: it rejects every refund it takes.
    Taken one by one until the queue is empty: every refund was published (and confirmed)
    before, and a stale one reaching the head of the queue expires there instead."""
    taken = 0
    while True:
        method, _, _ = channel.basic_get(WORK_QUEUE, auto_ack=False)
        if method is None:
            return taken
        taken += 1
        channel.basic_reject(method.delivery_tag, requeue=False)


def _dead_lettered_wait(channel, count, *, timeout):
    """Until `count` dead letters are in the DLQ (RabbitMQ moves them there on its own time),
    at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if channel.queue_declare(DEAD_LETTER_QUEUE, passive=True).method.message_count >= count:
            return
        time.sleep(0.05)
