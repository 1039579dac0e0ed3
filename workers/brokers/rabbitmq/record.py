"""AMQP 0-9-1 messages as Antidote messages, and back again.

A message drained from a RabbitMQ dead-letter queue becomes an ingest record whose headers are
text (Antidote's headers are a JSON object of strings). Two views of the AMQP properties are kept:

- each AMQP header as readable text, for people and for `workers.brokers.dead_letters` (a header
  that is not a string is shown as JSON: `x-death` is a list of tables);
- PROPERTIES_HEADER: every property, headers included, in a typed JSON form (an integer stays an
  integer, a timestamp a timestamp, bytes bytes), from which a redrive publishes the message as
  it was received (`properties_text`, `properties_read`).

A redrive publishes the properties as received, the broker's death record (`x-death`) included,
as RabbitMQ's shovel does: consumers that count deaths to stop a retry loop keep counting, and
when the message dies again the broker adds to that record, which gives the new death a new id
here (`message_id_of`).
"""

import base64
import hashlib
import json
from datetime import UTC, datetime
from decimal import Decimal

import orjson
import pika

from workers.engine.own_headers import SOURCE_HEADER

PROPERTIES_HEADER = "amqp-properties"
DRAINED_FROM_HEADER = "amqp-drained-from"
UNUSABLE_ID_HEADER = "amqp-message-id-unusable"
# What this source writes of a message, besides the source's name (workers.engine.own_headers).
OWN_HEADERS = frozenset((PROPERTIES_HEADER, DRAINED_FROM_HEADER, UNUSABLE_ID_HEADER))
PROPERTY_NAMES = (
    "content_type",
    "content_encoding",
    "headers",
    "delivery_mode",
    "priority",
    "correlation_id",
    "reply_to",
    "expiration",
    "message_id",
    "timestamp",
    "type",
    "user_id",
    "app_id",
    "cluster_id",
)
ID_MAX_LENGTH = 200


class PropertiesUnreadable(ValueError):
    """The stored AMQP properties cannot be turned back into properties to publish."""


# --- Typed values ------------------------------------------------------------------------------
# JSON, with the values JSON has no type for (bytes, decimals, timestamps) as one-key objects
# whose key starts with TAG: no table a publisher sends has such a key. The C encoder does the
# rest, which matters: a drain maps every message's properties.
TAG = "\x00"


def _typed(value):
    if isinstance(value, bytes | bytearray):
        return {TAG + "bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Decimal):
        return {TAG + "decimal": str(value)}
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return {TAG + "timestamp": int(moment.timestamp())}
    raise TypeError(f"an AMQP field value cannot be of type {type(value).__name__}")


def _untyped(obj):
    if len(obj) != 1:
        return obj
    ((key, inner),) = obj.items()
    if not key.startswith(TAG):
        return obj
    tag = key[len(TAG) :]
    if tag == "bytes":
        return base64.b64decode(inner)
    if tag == "decimal":
        return Decimal(inner)
    if tag == "timestamp":
        # pika writes a naive datetime as seconds since the epoch in UTC.
        return datetime.fromtimestamp(inner, UTC).replace(tzinfo=None)
    raise PropertiesUnreadable(f"unknown typed value tag {tag!r}")


def _readable(value):
    """A header value JSON has no type for, as a person reads it."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        return moment.isoformat()
    raise TypeError(f"an AMQP field value cannot be of type {type(value).__name__}")


# orjson, not json: a drain maps every message's properties twice, and with a Python `default`
# for each timestamp json's C encoder took most of a RabbitMQ drain's mapping time (bench
# brokers). orjson writes a timestamp as _readable does (OPT_NAIVE_UTC). It refuses tables
# nested deeper than 254 levels: such a delivery is set aside with that reason, as any other
# that cannot be read (console.ingest.consumers).
_TYPED_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME
_READABLE_OPTIONS = orjson.OPT_NAIVE_UTC
# The hash of a message without a usable message_id (message_id_of) is taken over this
# encoding, json's, as it was before orjson: a delivery taken before an upgrade and again after
# it keeps its id, and is stored once.
_TYPED_FOR_ID = json.JSONEncoder(default=_typed, sort_keys=True)


def header_text(value):
    """A header as text: a string as it is, anything else as JSON (`x-death`, a list of tables,
    is what the dead-letter reader parses)."""
    if type(value) is str:
        return value
    if isinstance(value, bytes | bytearray | Decimal | datetime):
        return _readable(value)
    return orjson.dumps(value, default=_readable, option=_READABLE_OPTIONS).decode()


# --- AMQP delivery -> ingest record -------------------------------------------------------------


def _properties(properties):
    return {
        name: value
        for name in PROPERTY_NAMES
        if (value := getattr(properties, name, None)) is not None
    }


def properties_text(properties):
    """Every set property of a pika BasicProperties, as typed JSON (see above)."""
    return orjson.dumps(_properties(properties), default=_typed, option=_TYPED_OPTIONS).decode()


def properties_read(text):
    """The properties `properties_text` wrote, as pika values; PropertiesUnreadable if not."""
    try:
        values = json.loads(text, object_hook=_untyped)
    except (ValueError, TypeError) as exc:
        raise PropertiesUnreadable(f"the stored AMQP properties cannot be read: {exc}") from exc
    if not isinstance(values, dict):
        raise PropertiesUnreadable("the stored AMQP properties are not a JSON object")
    return values


def _usable_id(message_id):
    return (
        isinstance(message_id, str)
        and 0 < len(message_id) <= ID_MAX_LENGTH
        and message_id.isprintable()
    )


def death_count(headers):
    """How many times the broker dead-lettered the message, by its x-death record (0: none)."""
    deaths = (headers or {}).get("x-death")
    if not isinstance(deaths, list):
        return 0
    # pika decodes a long as its own int subclass: isinstance, but never a bool.
    counts = (d.get("count") for d in deaths if isinstance(d, dict))
    return sum(c for c in counts if isinstance(c, int) and not isinstance(c, bool))


def message_id_of(*, body, properties, queue):
    """The id of one dead-lettered message: stable across redeliveries of it (a consumer killed
    before its acknowledgement takes it again, and ingest stores it once), new for each death.

    It is the AMQP message_id for its first death, `<message_id>#death-<n>` for its n-th (a
    message redriven and dead-lettered again is a new quarantine, not a duplicate of the first).
    Where the publisher set no message_id (or one Antidote cannot use), it is a hash of the
    delivery: body and properties, the death record's time and count included."""
    message_id = properties.message_id
    if _usable_id(message_id):
        deaths = death_count(properties.headers)
        if deaths <= 1:
            return message_id
        suffix = f"#death-{deaths}"
        return message_id[: ID_MAX_LENGTH - len(suffix)] + suffix
    digest = hashlib.sha256()
    digest.update(queue.encode())
    digest.update(b"\0")
    digest.update(_TYPED_FOR_ID.encode(_properties(properties)).encode())
    digest.update(b"\0")
    digest.update(body)
    return f"amqp-{digest.hexdigest()[:40]}"


def record_of(*, body, properties, drained_from, into, source):
    """The ingest record of one message taken from RabbitMQ queue `drained_from` for Antidote
    queue `into`, by source `source`."""
    own = {
        PROPERTIES_HEADER: properties_text(properties),
        SOURCE_HEADER: source,
        DRAINED_FROM_HEADER: drained_from,
    }
    raw_id = properties.message_id
    if raw_id is not None and not _usable_id(raw_id):
        own[UNUSABLE_ID_HEADER] = header_text(raw_id)[:1000]
    record = {
        "id": message_id_of(body=body, properties=properties, queue=drained_from),
        "queue": into,
        "body": bytes(body),
        # The publisher's headers, which ingest keeps as they are but for a name of ours
        # (R18: set aside), and our records of the delivery.
        "headers": {name: header_text(value) for name, value in (properties.headers or {}).items()},
        "own_headers": own,
    }
    content_type = properties.content_type
    if isinstance(content_type, str) and content_type and content_type.isprintable():
        record["content_type"] = content_type
    if isinstance(properties.correlation_id, str) and properties.correlation_id:
        record["conversation_id"] = properties.correlation_id
    if isinstance(properties.reply_to, str) and properties.reply_to:
        record["sender"] = properties.reply_to
    return record


# --- Antidote message -> properties to publish ---------------------------------------------------


def came_from_rabbitmq(headers):
    return PROPERTIES_HEADER in (headers or {})


def publish_properties(headers, *, persistent_default=True):
    """pika BasicProperties to publish a drained message with: its properties as received, but
    `user_id`: RabbitMQ refuses a publish whose user_id is not the publishing connection's user,
    and the original publisher's need not be. A message that did not come from RabbitMQ is
    published persistent, with no other property."""
    text = (headers or {}).get(PROPERTIES_HEADER)
    if text is None:
        return pika.BasicProperties(delivery_mode=2 if persistent_default else None)
    values = properties_read(text)
    return pika.BasicProperties(
        **{k: v for k, v in values.items() if k in PROPERTY_NAMES and k != "user_id"}
    )
