"""Redis stream entries as Antidote messages, and back again.

An entry is an ordered list of field/value pairs, each a byte string (a name may even appear
twice). A drained entry becomes an ingest record:

- its body is the value of the source's body field (`body` unless the source says otherwise);
  every other field becomes a header, as text (a value that is not UTF-8 is shown in base64);
- an entry without that field is common (many applications write `order_id`, `amount`, ... and
  no body at all), so it is not refused: its body is the JSON object of all its fields, which a
  person reads and may edit, and which a redrive turns back into fields. Only an entry that such
  an object cannot hold (a field that is not UTF-8 text, a name used twice) is malformed: the
  source parks it with the reason `EntryMalformed` gives;
- FIELDS_HEADER keeps the entry's fields exactly (order, repeated names, bytes), the body's
  value left out, so a redrive writes them back as they were received, with the body Antidote
  holds (edited, if it was edited). The readable headers are for people and never read back;
- the origin headers (ORIGIN_HEADERS) say where it was and why it is a dead letter: stream,
  entry id, group, the consumer that last had it and how many times the group delivered it.
  `workers.brokers.dead_letters.dead_letter_of` reads them back for the intake handler, with
  the reason "delivered 5 times to consumer group 'billing' of stream 'orders' without an
  acknowledgement; last consumer 'worker-3'".

The record's id is `redis-<stream>-<entry id>`: stable across redeliveries (a consumer killed
before its acknowledgement claims the entry again, and ingest stores it once) and new for each
death, since a redriven entry is appended again with a new entry id. A field such as the id field
a redrive adds is not used for it: a redriven message that died again would share its first id
and be taken for a duplicate.

Pure Python: no Django, no Redis client.
"""

import base64
import hashlib
import json

from workers.brokers.formats.redis_origin import (
    REDIS_CONSUMER,
    REDIS_DELIVERIES,
    REDIS_ENTRY_ID,
    REDIS_GROUP,
    REDIS_HEADERS,
    REDIS_IDLE_MS,
    REDIS_STREAM,
)
from workers.engine.own_headers import SOURCE_HEADER

# The origin headers, named where the intake handler reads them (dead_letters.dead_letter_of).
STREAM_HEADER = REDIS_STREAM
ENTRY_ID_HEADER = REDIS_ENTRY_ID
GROUP_HEADER = REDIS_GROUP
CONSUMER_HEADER = REDIS_CONSUMER
DELIVERIES_HEADER = REDIS_DELIVERIES
IDLE_HEADER = REDIS_IDLE_MS
ORIGIN_HEADERS = REDIS_HEADERS
BODY_FIELD_HEADER = "redis-body-field"
FIELDS_HEADER = "redis-fields"
# What this source writes of a message, besides the source's name (workers.engine.own_headers).
OWN_HEADERS = frozenset((*ORIGIN_HEADERS, BODY_FIELD_HEADER, FIELDS_HEADER))
CONTENT_TYPE_FIELD = b"content-type"
# A Redis key may be any bytes up to 512 MB, an ingest id at most 200 characters: an id keeps
# the stream's name when it is short and printable (with an entry id of at most 41, it fits), a
# digest of it otherwise.
STREAM_IN_ID_LIMIT = 120
# What is shown for an unknown last consumer (an entry Antidote had claimed before a restart).
UNKNOWN_CONSUMER = ""


class EntryMalformed(ValueError):
    """The entry cannot become a message; the text says why, for a person."""


class FieldsUnreadable(ValueError):
    """A message's stored fields or body cannot be turned back into an entry's fields."""


# --- Entry -> ingest record --------------------------------------------------------------------


def _text(value):
    """`value` (bytes) as text, or None when it is not UTF-8."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _typed(value):
    # An object is never text, so a value that was not UTF-8 cannot be taken for one that was.
    text = _text(value)
    return text if text is not None else {"base64": base64.b64encode(value).decode("ascii")}


def _readable(value):
    text = _text(value)
    return text if text is not None else base64.b64encode(value).decode("ascii")


def _name(value):
    return value.decode("utf-8", "backslashreplace")


def message_id_of(stream, entry_id):
    """The id of the record of entry `entry_id` (text, "1700000000000-0") of stream `stream`."""
    if len(stream) <= STREAM_IN_ID_LIMIT and stream.isprintable():
        return f"redis-{stream}-{entry_id}"
    digest = hashlib.sha256(stream.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"redis-{digest}-{entry_id}"


def record_of(
    *, stream, entry_id, fields, group, consumer, deliveries, idle_ms, body_field, into, source
):
    """The ingest record of entry `entry_id` of `stream`, taken from consumer group `group`
    (last held by `consumer`, delivered `deliveries` times) for Antidote queue `into` by source
    `source`. `fields` is the entry's [(name, value), ...] as bytes; `body_field` is text.
    Raises EntryMalformed when no record can hold the entry."""
    wanted = body_field.encode("utf-8")
    position = next((i for i, (name, _) in enumerate(fields) if name == wanted), None)
    own = {
        STREAM_HEADER: stream,
        ENTRY_ID_HEADER: entry_id,
        GROUP_HEADER: group,
        CONSUMER_HEADER: consumer,
        DELIVERIES_HEADER: str(deliveries),
        IDLE_HEADER: str(idle_ms),
        SOURCE_HEADER: source,
    }
    if position is None:
        body = _fields_json(fields, body_field)
    else:
        body = bytes(fields[position][1])
        kept = [
            None if i == position else [_typed(name), _typed(value)]
            for i, (name, value) in enumerate(fields)
        ]
        own[BODY_FIELD_HEADER] = body_field
        own[FIELDS_HEADER] = json.dumps(kept)
    # The entry's fields as its headers, for people and the dead-letter reader; ingest keeps a
    # field named like one of ours under a foreign name (R18), so no entry can pass for another
    # origin. A name given twice: the first value shows (FIELDS_HEADER has both).
    headers = {}
    for i, (name, value) in enumerate(fields):
        if i != position:
            headers.setdefault(_name(name), _readable(value))
    record = {
        "id": message_id_of(stream, entry_id),
        "queue": into,
        "body": body,
        "headers": headers,
        "own_headers": own,
    }
    content_type = next((v for n, v in fields if n == CONTENT_TYPE_FIELD), None)
    content_type = _text(content_type) if content_type is not None else None
    if content_type and content_type.isprintable():
        record["content_type"] = content_type
    elif position is None:
        record["content_type"] = "application/json"
    return record


def _fields_json(fields, body_field):
    """The body of an entry without a body field: its fields as one JSON object of text."""
    values = {}
    for name, value in fields:
        text_name, text = _text(name), _text(value)
        where = f"it has no '{body_field}' field, so its body would be the JSON of its fields"
        if text_name is None:
            raise EntryMalformed(f"{where}, and a field name is not UTF-8 text: '{_name(name)}'")
        if text is None:
            raise EntryMalformed(f"{where}, and field '{text_name}' is not UTF-8 text")
        if text_name in values:
            raise EntryMalformed(f"{where}, and field '{text_name}' appears twice")
        values[text_name] = text
    return json.dumps(values, ensure_ascii=False).encode("utf-8")


# --- Antidote message -> fields to publish ---------------------------------------------------


def came_from_redis(headers):
    return STREAM_HEADER in (headers or {})


def _untyped(value):
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, dict) and isinstance(value.get("base64"), str):
        return base64.b64decode(value["base64"], validate=True)
    raise FieldsUnreadable(f"the stored Redis fields hold a value of another kind: {value!r:.80}")


def fields_to_publish(*, headers, body, body_field):
    """[(name, value), ...] as bytes: the entry's fields as received with the body Antidote
    holds; for an entry that had no body field, the fields of the (perhaps edited) JSON body;
    for a message that did not come from Redis, only its body, under `body_field`. Raises
    FieldsUnreadable when none of these can be read."""
    headers = headers or {}
    text = headers.get(FIELDS_HEADER)
    if text is not None:
        try:
            kept = json.loads(text)
            if not isinstance(kept, list):
                raise FieldsUnreadable("the stored Redis fields are not a list")
            fields = []
            for pair in kept:
                if pair is None:
                    fields.append((headers.get(BODY_FIELD_HEADER, body_field).encode(), body))
                elif isinstance(pair, list) and len(pair) == 2:
                    fields.append((_untyped(pair[0]), _untyped(pair[1])))
                else:
                    raise FieldsUnreadable("the stored Redis fields hold something not a pair")
        except (ValueError, TypeError) as exc:
            if isinstance(exc, FieldsUnreadable):
                raise
            raise FieldsUnreadable(f"the stored Redis fields cannot be read: {exc}") from None
        return fields
    if came_from_redis(headers):
        try:
            values = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            values = None
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            raise FieldsUnreadable(
                "the entry had no body field, so its body must be a JSON object of text values "
                "(one per field); it is not one any more"
            )
        return [(name.encode("utf-8"), value.encode("utf-8")) for name, value in values.items()]
    return [(body_field.encode("utf-8"), body)]
