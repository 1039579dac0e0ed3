"""The RabbitMQ source (a `Source`, workers.brokers.base): drains a dead-letter queue with pika.

`open` connects (one attempt: the loop backs off between attempts), puts the channel in confirm
mode, checks the queue exists and sets the prefetch. Deliveries come from the channel's consume
generator; a batch is acknowledged with one `basic_ack(multiple=True)` up to its last tag, so a
batch may only be acknowledged once those before it are (the loop acknowledges in order). What
ingest refuses is published, with confirms, to a parking queue beside the drained one
(`<queue>.antidote-refused`) with its reason in a header.

The broker's URL goes no further than pika: `where` names the host, port and vhost, never the
URL or its password.

The sink is workers.brokers.rabbitmq.sink, the redrive handler `workers.brokers.redrive.publisher`.
"""

import contextlib
import time
from urllib.parse import urlparse

import pika
import pika.exceptions as amqp

from workers.brokers.base import Delivery, SourceConfig, SourceDown
from workers.brokers.rabbitmq.record import PROPERTY_NAMES, record_of
from workers.brokers.registry import RABBITMQ
from workers.redaction import url_secrets

KIND = RABBITMQ.kind
REFUSED_SUFFIX = ".antidote-refused"
REFUSED_REASON_HEADER = "x-antidote-refused-reason"
REFUSED_USER_HEADER = "x-antidote-refused-user-id"
REASON_LIMIT = 1000
# A broker short of memory or disk blocks publishers; a parking publish gives up after this
# rather than hang the source, which then reconnects like after any other failure.
BLOCKED_SECONDS = 60
# The queue's depth is asked for at most this often: a passive declare is a round trip on the
# consuming channel, and the page needs no fresher number.
LAG_SECONDS = 5.0


def _parameters(config):
    url = config.url
    if urlparse(url).scheme not in ("amqp", "amqps"):
        raise SourceDown(f"the URL in {config.url_env} must start with amqp:// or amqps://")
    try:
        parameters = pika.URLParameters(url)
    except Exception:
        # The parser's message may quote the URL, password and all.
        raise SourceDown(
            f"the URL in {config.url_env} cannot be read (amqp://user:password@host:port/vhost)"
        ) from None
    parameters.connection_attempts = 1
    if parameters.blocked_connection_timeout is None:
        parameters.blocked_connection_timeout = BLOCKED_SECONDS
    return parameters


def _where(parameters):
    return f"RabbitMQ at {parameters.host}:{parameters.port}, vhost {parameters.virtual_host!r}"


class RabbitMQSourceLink:
    """One source's connection and channel (see SourceLink)."""

    def __init__(self, config, parameters):
        self.config = config
        self.queue = config.drained
        self.parking = config.drained + REFUSED_SUFFIX
        self.where = _where(parameters)
        password = getattr(parameters.credentials, "password", "") or ""
        self.secrets = tuple(s for s in (*url_secrets(config.url, path=False), password) if s)
        self.parking_declared = False
        self.lag_seen = None
        self.lag_asked = None
        self.connection = pika.BlockingConnection(parameters)
        try:
            self.channel = self.connection.channel()
            self.channel.confirm_delivery()
            self.channel.queue_declare(self.queue, passive=True)
            self.channel.basic_qos(prefetch_count=config.prefetch)
        except BaseException:
            self.close()
            raise

    def fetch(self, *, limit, timeout):
        taken = []
        # A generator per call (pika keeps one consumer per channel and queue behind them all):
        # what is buffered is taken at once, and the wait for the first is at most `timeout`.
        for method, properties, body in self.channel.consume(
            self.queue, inactivity_timeout=timeout
        ):
            if method is None:
                return taken
            taken.append(
                Delivery(token=method.delivery_tag, body=body, raw=properties, size=len(body))
            )
            if len(taken) >= limit or not self.channel.get_waiting_message_count():
                return taken
        # The generator ends when the broker cancels the consumer: its queue was deleted.
        raise SourceDown(f"the broker cancelled the consumer of queue {self.queue!r}")

    def record(self, delivery):
        return record_of(
            body=delivery.body,
            properties=delivery.raw,
            drained_from=self.queue,
            into=self.config.into,
            source=self.config.name,
        )

    def park(self, delivery, reason):
        """Publish one refused message to the parking queue and wait for the broker's confirm
        (the channel is in confirm mode: pika raises if the broker nacks or cannot route it)."""
        if not self.parking_declared:
            self.channel.queue_declare(self.parking, durable=True)
            self.parking_declared = True
        properties = delivery.raw
        values = {name: getattr(properties, name, None) for name in PROPERTY_NAMES}
        headers = dict(values.pop("headers") or {})
        headers[REFUSED_REASON_HEADER] = reason[:REASON_LIMIT]
        user_id = values.pop("user_id")
        if user_id is not None:
            # RabbitMQ refuses a publish whose user_id is not the connection's own user.
            headers[REFUSED_USER_HEADER] = user_id
        self.channel.basic_publish(
            exchange="",
            routing_key=self.parking,
            body=delivery.body,
            properties=pika.BasicProperties(headers=headers, **values),
            mandatory=True,
        )

    def ack(self, deliveries):
        if deliveries:
            self.channel.basic_ack(delivery_tag=deliveries[-1].token, multiple=True)

    def lag(self):
        now = time.monotonic()
        if self.lag_asked is None or now - self.lag_asked >= LAG_SECONDS:
            # Ready messages only: those delivered to us and not yet acknowledged are not lag.
            declared = self.channel.queue_declare(self.queue, passive=True)
            self.lag_seen, self.lag_asked = declared.method.message_count, now
        return self.lag_seen

    def close(self):
        # Deliveries not acknowledged go back to the queue when the connection closes: the
        # broker delivers them again and ingest, being idempotent, stores them once.
        channel = getattr(self, "channel", None)
        if channel is not None and channel.is_open:
            with contextlib.suppress(Exception):
                channel.cancel()
        if self.connection.is_open:
            with contextlib.suppress(Exception):
                self.connection.close()


class RabbitMQSource:
    kind = KIND
    title = RABBITMQ.title
    errors = (amqp.AMQPError,)
    sink = RABBITMQ.redrive_handler

    def where(self, config: SourceConfig) -> str:
        return _where(_parameters(config))

    def open(self, config: SourceConfig) -> RabbitMQSourceLink:
        return RabbitMQSourceLink(config, _parameters(config))

    def why(self, exc, config):
        """What went wrong, for people (the loop scrubs secrets and says where)."""
        if isinstance(exc, SourceDown):
            return str(exc)
        if isinstance(exc, amqp.ProbableAuthenticationError):
            return f"the broker refused the login (check the user and password in {config.url_env})"
        if isinstance(exc, amqp.ChannelClosedByBroker):
            if exc.reply_code == 404:
                return f"queue {config.drained!r} does not exist ({exc.reply_text})"
            return f"the broker closed the channel: ({exc.reply_code}) {exc.reply_text}"
        if isinstance(exc, amqp.ConnectionClosedByBroker):
            return f"the broker closed the connection: ({exc.reply_code}) {exc.reply_text}"
        if isinstance(exc, amqp.ProbableAccessDeniedError):
            return f"access refused: {exc.args[0] if exc.args else exc}"
        if isinstance(exc, amqp.IncompatibleProtocolError):
            # What pika reports when the peer hangs up before the AMQP handshake is done.
            return "the connection was closed before the AMQP handshake (is it RabbitMQ? a proxy?)"
        if isinstance(exc, amqp.StreamLostError):
            return f"connection lost: {exc}"
        if isinstance(exc, amqp.AMQPConnectionError):
            # pika wraps the socket's error in its own: show the innermost, which says what
            # happened.
            inner = exc
            while True:
                nested = getattr(inner, "exception", None) or (
                    inner.args[0] if inner.args else None
                )
                if not isinstance(nested, Exception):
                    break
                inner = nested
            if isinstance(inner, OSError) and inner.strerror:
                return f"cannot connect: {inner.strerror}"
            return f"cannot connect: {inner!r}"
        if isinstance(exc, OSError):
            return f"cannot connect: {exc.strerror or exc!r}"
        if isinstance(exc, amqp.UnroutableError | amqp.NackError):
            return "the broker did not take a refused message into the parking queue"
        return f"{exc.__class__.__name__}: {exc}"

    def options_errors(self, options):
        # Everything a RabbitMQ source needs is in the source's own fields.
        if options:
            return [f"RabbitMQ sources take no options, not {', '.join(sorted(map(str, options)))}"]
        return []

    def parking_name(self, config):
        return config.drained + REFUSED_SUFFIX


CONNECTOR = RabbitMQSource()
