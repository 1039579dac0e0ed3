"""The RabbitMQ sink: the handler `workers.brokers.redrive.publisher` publishes a message back.

A redrive request may name its own exchange and routing key (its `redrive_target`, keys
`exchange` and `routing_key`): they come first. Otherwise the redrive queue's handler options say
where a message goes: by default back to the queue it died
in (the default exchange, with that queue's name as routing key, so no other queue bound to its
old exchange gets a second copy), or to the exchange and routing key it was first published with
(`target="original_exchange"`), or to a fixed `exchange` / `routing_key`. The body goes out as
Antidote holds it (edited, if it was edited), with the AMQP properties it was received with.

Guarantees: at least once, never more than needed.
- A publish counts as done only when RabbitMQ confirms it (publisher confirms) and routed it to a
  queue (mandatory: an unroutable message comes back, and that is a transient failure, not a
  silent drop). A confirmed publish is a success and the engine never calls this again for it.
- A publish whose confirm never came (connection lost, channel closed, no answer in time) is a
  transient failure, retried by the queue's backoff. RabbitMQ may have stored it anyway, so only
  such a publish can reach its queue twice.
- A refused publish (nack), an unroutable one, or one RabbitMQ never saw is a transient failure
  too: the queue may be emptied or created again.

Speed: publishes are pipelined. Each call publishes and returns a Deferred; at most `window`
wait for their confirms at once, and `settle()`, called by the engine at the end of the batch,
waits for the rest. Waiting for each confirm in turn (py-amqp's `confirm_publish=True`) costs a
round trip per message.

Processes: the engine builds the handler in one process and forks a child per batch to call it,
so the connection is opened lazily by the process that publishes, never inherited, and closed
when the batch settles. The broker's URL is read from the environment when connecting and never
kept; errors name host:port/vhost only.
"""

import contextlib
import os
import time
from urllib.parse import unquote, urlsplit

import amqp
from amqp.serialization import dumps
from amqp.spec import Basic

from workers.brokers.base import (
    LinkedSink,
    NoRedriveTarget,
    RedriveConnectionFailed,
    RedriveNotConfirmed,
    RedriveUnroutable,
    env_name_checked,
    redrive_destination,
    seconds_checked,
    window_checked,
)
from workers.brokers.dead_letters import latest_death
from workers.brokers.rabbitmq.record import (
    PropertiesUnreadable,
    came_from_rabbitmq,
    publish_properties,
)
from workers.engine.handlers import PermanentFailure, configurable

TARGETS = ("original_queue", "original_exchange")
CONNECT_TIMEOUT = 10.0
# Closing says goodbye to the broker (its log stays free of "unexpectedly closed" warnings); it
# must not hold up a batch whose outcomes are all known.
CLOSE_TIMEOUT = 2.0
PUBLISH = Basic.Publish


@configurable
def publisher(
    *,
    url_env="ANTIDOTE_AMQP_URL",
    target="original_queue",
    exchange=None,
    routing_key=None,
    confirm_timeout=30.0,
    window=1000,
):
    """The redrive handler of one queue (see the module docstring). Connects at the first call."""
    env_name_checked("url_env", url_env)
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, not {target!r}")
    for name, value in (("exchange", exchange), ("routing_key", routing_key)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{name} must be text")
    return RabbitMQSink(
        url_env=url_env,
        target=target,
        exchange=exchange,
        routing_key=routing_key,
        confirm_timeout=seconds_checked("confirm_timeout", confirm_timeout),
        window=window_checked(window),
    )


class RabbitMQSink(LinkedSink):
    def __init__(self, *, url_env, target, exchange, routing_key, confirm_timeout, window):
        self.url_env = url_env
        self.target = target
        self.exchange = exchange
        self.routing_key = routing_key
        self.confirm_timeout = confirm_timeout
        self.window = window
        super().__init__()

    def __call__(self, message):
        exchange, routing_key = self._destination(message)
        header = content_header(message)
        return self._publish(bytes(message.body), header, exchange, routing_key)

    def _connect(self):
        return _Link.open(self.url_env, self.confirm_timeout, self.window)

    def _destination(self, message):
        requested = _requested(message)
        if requested is not None:
            return requested
        if self.exchange is not None or self.routing_key is not None:
            return self.exchange or "", self.routing_key or ""
        # The broker's death record says where a message died, but only of a message a
        # RabbitMQ source drained (R18): any other route's `x-death` is what a producer wrote.
        headers = message.headers
        queue, exchange, keys = (
            latest_death(headers) if came_from_rabbitmq(headers) else (None, None, ())
        )
        if self.target == "original_exchange":
            if exchange is not None:
                return exchange, keys[0] if keys else ""
        elif queue is not None:
            return "", queue
        raise NoRedriveTarget(
            "no x-death record of a RabbitMQ source says where it came from and the queue sets "
            "no exchange/routing_key"
        )


def _requested(message):
    """(exchange, routing key) of the redrive request's own target (`redrive_target`), None
    when it names neither: then the queue's options or the message's origin say. An exchange
    left out is the default exchange, as the queue's own options have it."""
    chosen = redrive_destination(
        message, keys=("exchange", "routing_key"), configured={}, origin=dict
    )
    if not chosen:
        return None
    return chosen.get("exchange", ""), chosen.get("routing_key", "")


def content_header(message):
    """The AMQP content header (property flags and values) to publish `message` with, encoded by
    pika: what the original publisher's pika client wrote, so a pika consumer reads back the same
    Python values. py-amqp's own encoder would write a bytes header as text, an integer over 32
    bits with a tag pika reads differently from RabbitMQ, and fail on Decimal('1E+2')."""
    try:
        properties = publish_properties(message.headers)
    except PropertiesUnreadable as exc:
        raise PermanentFailure(str(exc)) from exc
    if not came_from_rabbitmq(message.headers):
        properties.content_type = message.content_type or None
        properties.message_id = message.id
    try:
        return b"".join(properties.encode())
    except Exception as exc:  # pika checks with asserts and struct: any error means unencodable
        raise PermanentFailure(
            f"the message's AMQP properties cannot be encoded: {exc.__class__.__name__}: {exc}"
        ) from exc


class _Content:
    """A message body with its content header already encoded (`content_header`), as py-amqp's
    frame writer takes one: it reads `body` and asks `_serialize_properties()` for the header."""

    __slots__ = ("body", "header")

    def __init__(self, body, header):
        self.body = body
        self.header = header

    def _serialize_properties(self):
        return self.header


class _Publish:
    __slots__ = ("body", "deferred", "exchange", "returned", "routing_key")

    def __init__(self, body, exchange, routing_key, deferred):
        self.body = body
        self.exchange = exchange
        self.routing_key = routing_key
        self.deferred = deferred
        self.returned = None  # RabbitMQ's reply when it returned the message as unroutable


class _Link:
    """One connection with a channel in confirm mode, used by the process that opened it."""

    def __init__(self, connection, channel, where, confirm_timeout, window):
        self.pid = os.getpid()
        self.connection = connection
        self.channel = channel
        self.where = where
        self.confirm_timeout = confirm_timeout
        self.window = window
        # Delivery tag -> _Publish, oldest first. After confirm.select RabbitMQ numbers a
        # channel's publishes 1, 2, 3...; a confirm names one tag, or every tag up to it.
        self.unconfirmed = {}
        self.next_tag = 1
        self.broken = None  # why this connection can no longer be used
        self.write_frame = connection.frame_writer
        self.publish_arguments = {}  # (exchange, routing key) -> encoded Basic.Publish arguments
        channel.events["basic_ack"].add(self._on_ack)
        channel.events["basic_nack"].add(self._on_nack)
        channel.events["basic_return"].add(self._on_return)

    @classmethod
    def open(cls, url_env, confirm_timeout, window):
        url = os.environ.get(url_env)
        if not url:
            raise RedriveConnectionFailed(f"{url_env} is not set")
        params, where = _connection_params(url, url_env)
        connection = amqp.Connection(
            connect_timeout=CONNECT_TIMEOUT,
            # How the connection shows in RabbitMQ's management UI and logs.
            client_properties={"connection_name": f"antidote redrive (pid {os.getpid()})"},
            **params,
        )
        # Without this py-amqp reads the socket (a timeout-0 poll) before every publish, to hear
        # of a connection.blocked notice it would only log: a third of a publish's cost. A broker
        # that blocks us just stops reading, and the socket's timeout ends the wait.
        connection.negotiate_capabilities = {
            **connection.negotiate_capabilities,
            "connection.blocked": False,
        }
        try:
            connection.connect()
            # The credentials did their work; they need not stay in this process's memory.
            connection.authentication = ()
            # Every later socket operation without a timeout of its own (a write to a broker that
            # stopped reading, opening the channel) gives up after this long.
            connection.transport.sock.settimeout(confirm_timeout)
            # auto_decode would turn a returned body into text when it has a content_encoding.
            channel = amqp.Channel(connection, auto_decode=False)
            channel.open()
            channel.confirm_select()
        except (OSError, amqp.AMQPError) as exc:
            _drop(connection)
            raise RedriveConnectionFailed(
                f"cannot connect to RabbitMQ at {where}: {_describe(exc)}"
            ) from None
        return cls(connection, channel, where, confirm_timeout, window)

    def publish(self, body, header, exchange, routing_key, deferred):
        while len(self.unconfirmed) >= self.window and self.broken is None:
            if not self._read(self.confirm_timeout):
                self._give_up(self._not_confirmed())
        if self.broken is not None:
            raise type(self.broken)(str(self.broken))
        publish = _Publish(body, exchange, routing_key, deferred)
        route = (exchange, routing_key)
        arguments = self.publish_arguments.get(route)
        if arguments is None:
            # Basic.Publish's arguments: reserved, exchange, routing key, mandatory, immediate.
            arguments = dumps("Bssbb", (0, exchange, routing_key, True, False))
            self.publish_arguments[route] = arguments
        try:
            # What channel.basic_publish does, less its wrapping (a promise, a timeout context,
            # the arguments encoded again), which cost twice the writing itself.
            self.write_frame(1, self.channel.channel_id, PUBLISH, arguments, _Content(body, header))
        except (OSError, amqp.AMQPError) as exc:
            # Part of the frame may have gone out: nothing more can be said on this connection.
            lost = self._lost(exc)
            self._give_up(lost)
            raise lost from None
        self.unconfirmed[self.next_tag] = publish
        self.next_tag += 1

    def wait_all(self):
        deadline = time.monotonic() + self.confirm_timeout
        while self.unconfirmed and self.broken is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._read(remaining):
                self._give_up(self._not_confirmed())

    def close(self):
        if self.broken is not None:
            return
        self.broken = RedriveConnectionFailed(f"connection to RabbitMQ at {self.where} closed")
        try:
            with self.connection.transport.having_timeout(CLOSE_TIMEOUT):
                self.connection.close()
        except (OSError, amqp.AMQPError):
            _drop(self.connection)

    def _read(self, timeout):
        """Take in one frame from the broker (a confirm or a return); False if none came."""
        try:
            self.connection.drain_events(timeout=timeout)
        except TimeoutError:
            return False
        except (OSError, amqp.AMQPError) as exc:
            self._give_up(self._lost(exc))
        return True

    def _give_up(self, exc):
        """Fail every unconfirmed publish with `exc` and drop the connection."""
        unconfirmed, self.unconfirmed = self.unconfirmed, {}
        for publish in unconfirmed.values():
            publish.deferred.fail(exc)
        if self.broken is None:
            self.broken = exc
            _drop(self.connection)

    def _lost(self, exc):
        if isinstance(exc, amqp.ChannelError):
            return RedriveConnectionFailed(
                f"RabbitMQ at {self.where} closed the channel before confirming: {_describe(exc)}"
            )
        return RedriveConnectionFailed(
            f"connection to RabbitMQ at {self.where} lost before the broker confirmed: "
            f"{_describe(exc)}"
        )

    def _not_confirmed(self):
        return RedriveNotConfirmed(
            f"RabbitMQ at {self.where} did not confirm the publish within "
            f"{self.confirm_timeout:g} s"
        )

    def _confirmed(self, tag, multiple):
        if not multiple:
            publish = self.unconfirmed.pop(tag, None)
            return () if publish is None else (publish,)
        tags = []
        for pending in self.unconfirmed:
            if pending > tag:
                break
            tags.append(pending)
        return [self.unconfirmed.pop(pending) for pending in tags]

    def _on_ack(self, tag, multiple):
        for publish in self._confirmed(tag, multiple):
            if publish.returned is None:
                publish.deferred.done()
            else:
                publish.deferred.fail(
                    RedriveUnroutable(
                        f"no queue bound for {_exchange_name(publish.exchange)} routing key "
                        f"'{publish.routing_key}': {publish.returned}"
                    )
                )

    def _on_nack(self, tag, multiple):
        for publish in self._confirmed(tag, multiple):
            publish.deferred.fail(
                RedriveNotConfirmed(
                    f"RabbitMQ refused the publish (nack) to {_exchange_name(publish.exchange)} "
                    f"routing key '{publish.routing_key}': the queue may be full "
                    "(x-overflow reject-publish) or could not store it"
                )
            )

    def _on_return(self, exc, exchange, routing_key, message):
        # A return carries no delivery tag. RabbitMQ sends it before the confirm of the same
        # publish (https://www.rabbitmq.com/docs/confirms, "when will messages be confirmed"),
        # and returns come in publish order: so it belongs to the oldest unconfirmed publish of
        # that body to that exchange and key not yet returned. Two such publishes with equal
        # bodies are interchangeable.
        reply = f"{getattr(exc, 'reply_code', '')} {getattr(exc, 'reply_text', '')}".strip()
        for publish in self.unconfirmed.values():
            if (
                publish.returned is None
                and publish.exchange == exchange
                and publish.routing_key == routing_key
                and publish.body == message.body
            ):
                publish.returned = reply or "returned"
                return


def _connection_params(url, url_env):
    """py-amqp connection arguments for an amqp:// or amqps:// URL, and where it points
    (host:port/vhost, for messages). The URL itself never goes into an error: a mistyped one
    may hold the password where a host or port was expected."""
    bad = RedriveConnectionFailed(
        f"{url_env} is not an AMQP URL of the form amqp://user:password@host:port/vhost"
    )
    try:
        parts = urlsplit(url)
        scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
    except ValueError:
        raise bad from None
    # An '@' after the host part means the URL was cut in the wrong place (a '/' or '#' in the
    # password): what follows it may be the secret.
    if scheme not in ("amqp", "amqps") or "@" in parts.path + parts.query + parts.fragment:
        raise bad
    host = host or "localhost"
    port = port or (5671 if scheme == "amqps" else 5672)
    # The vhost as pika reads the same URL (the consumer that drains uses pika).
    vhost = unquote(parts.path.split("/")[1]) if len(parts.path) > 1 else "/"
    where = f"{host}:{port}{parts.path or '/'}"
    params = {
        "host": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        "userid": unquote(parts.username) if parts.username is not None else "guest",
        "password": unquote(parts.password) if parts.password is not None else "guest",
        "virtual_host": vhost,
    }
    if scheme == "amqps":
        # The system's trusted certificates, and the certificate must name the host.
        params["ssl"] = {"context": {"check_hostname": True}, "server_hostname": host}
    return params, where


def _describe(exc):
    text = str(exc)
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__


def _drop(connection):
    """Close the socket without a word to the broker: the connection is past talking to."""
    # A connection already gone cannot fail any further.
    with contextlib.suppress(Exception):
        connection.collect()


def _exchange_name(exchange):
    return f"exchange '{exchange}'" if exchange else "exchange '' (the default exchange)"
