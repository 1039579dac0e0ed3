"""NATS JetStream dead letters as Antidote messages, and back again. Pure Python: no client.

JetStream keeps no dead-letter queue. When a consumer gives up on a message (its `max_deliver`
reached, or the consumer answered AckTerm) the server publishes an advisory naming the stream
and the stream sequence, and the message stays in the stream. A source captures those
advisories and fetches each message by its sequence (STREAM.MSG.GET); this module turns the
pair into an ingest record.

What a record keeps as the message's origin, in headers of its own (the `nats-` prefix, in
lower case: NATS's own headers are spelled `Nats-...`):

- dead_letters.NATS_HEADERS: subject, stream, sequence, the time the stream stored it, the
  consumer that gave up, its delivery count, the advisory's kind, for AckTerm the consumer's
  reason, and the drain's sentence for why it died (REASON_HEADER). The intake handler and the
  message page read them with `dead_letters.dead_letter_of`;
- HEADERS_HEADER: the message's own headers, exactly, as a JSON object: what a redrive publishes
  (the same headers also appear one by one, for people).

A NATS header given twice is read as its last value, as nats-py reads it (a client publishes a
header name once: nats-py takes a dict).
"""

import base64
import hashlib
import json
from dataclasses import dataclass

from workers.brokers.formats import nats_origin as D
from workers.engine.own_headers import SOURCE_HEADER, is_product_name

# The origin's header names have one home, beside the reader the intake handler and the message
# page use (workers.brokers.dead_letters.dead_letter_of).
SUBJECT_HEADER = D.NATS_SUBJECT
STREAM_HEADER = D.NATS_STREAM
SEQUENCE_HEADER = D.NATS_SEQUENCE
STORED_AT_HEADER = D.NATS_STORED_AT
CONSUMER_HEADER = D.NATS_CONSUMER
DELIVERIES_HEADER = D.NATS_DELIVERIES
ADVISORY_HEADER = D.NATS_ADVISORY
TERM_REASON_HEADER = D.NATS_TERMINATED_REASON
REASON_HEADER = D.NATS_REASON
MAX_DELIVER = D.NATS_MAX_DELIVER
TERMINATED = D.NATS_TERMINATED

# The advisory types (io.nats.jetstream.advisory.v1.<kind>) a source follows, and the subject
# each is published on: $JS.EVENT.ADVISORY.CONSUMER.<token>.<stream>.<consumer>.
ADVISORY_TYPES = {
    "io.nats.jetstream.advisory.v1.max_deliver": MAX_DELIVER,
    "io.nats.jetstream.advisory.v1.terminated": TERMINATED,
}
ADVISORY_SUBJECT_TOKENS = {MAX_DELIVER: "MAX_DELIVERIES", TERMINATED: "MSG_TERMINATED"}
# The message's own headers, exactly, as a JSON object: what a redrive publishes.
HEADERS_HEADER = "nats-headers"
# What this source writes of a message, besides the source's name (workers.engine.own_headers).
OWN_HEADERS = frozenset((*D.NATS_HEADERS, HEADERS_HEADER))

NAME_LIMIT = 255
REASON_LIMIT = 2000
ID_LIMIT = 200
_HEADER_LINE = b"NATS/1.0"


class AdvisoryUnreadable(ValueError):
    """An advisory that is not a max_deliver or terminated advisory Antidote can read."""


class OtherAdvisory(AdvisoryUnreadable):
    """Another of JetStream's advisories (a nak, a consumer created...): no dead letter."""


class OriginalGone(LookupError):
    """The stream no longer holds the message an advisory names."""


@dataclass(frozen=True)
class Advisory:
    kind: str  # MAX_DELIVER or TERMINATED
    id: str  # the advisory's own id: unique per advisory
    stream: str
    consumer: str
    stream_seq: int
    deliveries: int
    reason: str  # the consumer's AckTerm reason (nats-server 2.11+), "" when none


@dataclass(frozen=True)
class Original:
    """A message as STREAM.MSG.GET returned it."""

    stream: str
    subject: str
    seq: int
    headers: dict
    body: bytes
    time: str  # when the stream stored it (RFC 3339), "" when not said


def advisory_of(data):
    """The Advisory in an advisory message's body; AdvisoryUnreadable (saying why) if none."""
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        raise AdvisoryUnreadable("the advisory is not JSON") from None
    if not isinstance(obj, dict):
        raise AdvisoryUnreadable("the advisory is not a JSON object")
    kind = ADVISORY_TYPES.get(obj.get("type"))
    if kind is None:
        if isinstance(obj.get("type"), str) and obj["type"].startswith("io.nats."):
            raise OtherAdvisory(f"the advisory's type is {_text(obj['type'])}")
        raise AdvisoryUnreadable(
            f"the advisory's type is {_text(obj.get('type'))}, "
            "not a max_deliver or terminated advisory"
        )
    for key in ("stream", "consumer"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise AdvisoryUnreadable(f"the advisory names no {key}")
    for key in ("stream_seq", "deliveries"):
        value = obj.get(key)
        # JSON true is a Python int: a sequence it is not.
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise AdvisoryUnreadable(f"the advisory's {key} is not a positive whole number")
    reason = obj.get("reason")
    return Advisory(
        kind=kind,
        id=obj["id"] if isinstance(obj.get("id"), str) else "",
        stream=obj["stream"],
        consumer=obj["consumer"],
        stream_seq=obj["stream_seq"],
        deliveries=obj["deliveries"],
        reason=reason if isinstance(reason, str) else "",
    )


def original_of(response, *, stream, seq):
    """The Original in a STREAM.MSG.GET reply's body. OriginalGone when the stream no longer
    holds it; AdvisoryUnreadable for any other refusal (the reply's own words)."""
    try:
        obj = json.loads(response)
    except ValueError:
        raise AdvisoryUnreadable(
            f"stream {_quoted(stream)} answered the get with no JSON"
        ) from None
    error = obj.get("error") if isinstance(obj, dict) else None
    if error is not None:
        code = error.get("code") if isinstance(error, dict) else None
        description = error.get("description", "") if isinstance(error, dict) else error
        if code == 404:
            raise OriginalGone(
                f"message {seq} is no longer in stream {_quoted(stream)} (deleted, purged or "
                f"removed by the stream's limits before it was drained): {_text(description)}"
            )
        raise AdvisoryUnreadable(
            f"stream {_quoted(stream)} refused to give message {seq}: "
            f"({_text(code)}) {_text(description)}"
        )
    message = obj.get("message") if isinstance(obj, dict) else None
    if not isinstance(message, dict) or not isinstance(message.get("subject"), str):
        raise AdvisoryUnreadable(f"stream {_quoted(stream)} answered the get with no message")
    try:
        body = base64.b64decode(message.get("data") or "", validate=True)
        headers = headers_of(base64.b64decode(message.get("hdrs") or "", validate=True))
    except ValueError as exc:
        raise AdvisoryUnreadable(f"message {seq} of stream {_quoted(stream)}: {exc}") from None
    return Original(
        stream=stream,
        subject=message["subject"],
        seq=seq,
        headers=headers,
        body=body,
        time=message["time"] if isinstance(message.get("time"), str) else "",
    )


def headers_of(block):
    """The headers of a NATS header block (`NATS/1.0\\r\\nName: value\\r\\n...\\r\\n`), exact:
    names as written, values UTF-8 (bytes that are not are kept as U+FFFD, said in the value)."""
    if not block:
        return {}
    lines = block.split(b"\r\n")
    if not lines[0].startswith(_HEADER_LINE):
        raise ValueError("its header block does not start with NATS/1.0")
    headers = {}
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(b":")
        if not colon:
            raise ValueError(f"a header line has no ':' ({line[:80]!r})")
        headers[name.decode("utf-8", "replace").strip()] = value.decode("utf-8", "replace").strip()
    return headers


def message_id_of(advisory, original):
    """The record's id: stable across redeliveries of the advisory (a consumer killed before its
    acknowledgement takes it again, and ingest stores it once); new for each dead letter.

    `nats-<stream>-<seq>`, then a digest of the stream, sequence, the time the stream stored it
    and the consumer that gave up: a stream deleted and created again numbers its messages from
    1 again, and two consumers giving up on one message are two failures. A redriven message
    that dies again is a new message of the stream (a new sequence), so a new quarantine.
    The message's Nats-Msg-Id is no part of it: a publisher may use one again once the stream's
    duplicate window has passed, and a new dead letter must never look like a duplicate."""
    digest = hashlib.sha256(
        "\0".join((original.stream, str(original.seq), original.time, advisory.consumer)).encode()
    ).hexdigest()[:16]
    stream = original.stream[: ID_LIMIT - 50]
    return f"nats-{stream}-{original.seq}-{digest}"


def reason_of(advisory):
    """Why the message died, for people: the consumer, its deliveries and its own reason."""
    consumer = _quoted(advisory.consumer)
    stream = _quoted(advisory.stream)
    deliveries = "once" if advisory.deliveries == 1 else f"{advisory.deliveries} times"
    if advisory.kind == MAX_DELIVER:
        sentence = (
            f"max deliveries reached: consumer {consumer} of stream {stream} gave up after "
            f"delivering it {deliveries}"
        )
    else:
        sentence = (
            f"terminated by consumer {consumer} of stream {stream} (AckTerm) after delivering "
            f"it {deliveries}"
        )
        if advisory.reason:
            sentence += f": {advisory.reason}"
    return _line(sentence, REASON_LIMIT)


def record_of(*, advisory, original, into, source):
    """The ingest record of `original`, named by `advisory`, for Antidote queue `into`."""
    own = {
        SUBJECT_HEADER: original.subject,
        STREAM_HEADER: original.stream,
        SEQUENCE_HEADER: str(original.seq),
        CONSUMER_HEADER: advisory.consumer,
        DELIVERIES_HEADER: str(advisory.deliveries),
        ADVISORY_HEADER: advisory.kind,
        # The message's own headers, exactly: what a redrive publishes.
        HEADERS_HEADER: json.dumps(original.headers, ensure_ascii=False, sort_keys=True),
        REASON_HEADER: reason_of(advisory),
        SOURCE_HEADER: source,
    }
    if original.time:
        own[STORED_AT_HEADER] = original.time
    if advisory.reason:
        own[TERM_REASON_HEADER] = advisory.reason
    return {
        "id": message_id_of(advisory, original),
        "queue": into,
        "body": original.body,
        # For people and the dead-letter reader; ingest keeps a name of ours (its Nats-Msg-Id,
        # a forged record) under a foreign name (R18).
        "headers": dict(original.headers),
        "own_headers": own,
    }


def came_from_nats(headers):
    return HEADERS_HEADER in (headers or {})


# --- Antidote message -> what to publish --------------------------------------------------------


def publish_headers(headers, *, content_type=None):
    """The headers to publish a message with: a message from NATS gets its own headers back
    exactly (HEADERS_HEADER); any other gets its headers less Antidote's bookkeeping, and its
    content type as Content-Type. Nats-Msg-Id and the Nats-Expected-* preconditions of the
    first publish are left out: the redrive sets its own id (`dedupe_id`), and a precondition
    that held for the first publish (an expected last sequence) would refuse every redrive.
    ValueError when the stored headers cannot be read."""
    headers = headers or {}
    if came_from_nats(headers):
        try:
            own = json.loads(headers[HEADERS_HEADER])
        except ValueError:
            raise ValueError("the stored NATS headers are not JSON") from None
        if not isinstance(own, dict) or not all(isinstance(v, str) for v in own.values()):
            raise ValueError("the stored NATS headers are not an object of text values")
    else:
        own = {
            name: value
            for name, value in headers.items()
            if not is_product_name(name) and isinstance(value, str)
        }
        if content_type and not any(name.lower() == "content-type" for name in own):
            own["Content-Type"] = content_type
    return {
        name: value
        for name, value in own.items()
        if name.lower() != "nats-msg-id" and not name.lower().startswith("nats-expected-")
    }


def dedupe_id(message_id, subject, body):
    """The Nats-Msg-Id of a redrive: the Antidote message id and a digest of where it goes and
    what it carries.

    JetStream stores one message per Nats-Msg-Id within the stream's duplicate window (two
    minutes by default). A redrive retried after an outage (its publish acknowledgement lost,
    though the stream may have stored it) sends the same message to the same subject again:
    same id, stored once. The message's `attempt` and `delivery_count` grow with each retry, so
    they cannot be part of it. What must be stored again has a new id: a message that died again
    comes back as a new Antidote message (a new stream sequence, so a new id), and a body edited
    before another reprocess, or another target subject, changes the digest. The original
    Nats-Msg-Id cannot be used: within the window the stream would take the redrive for the
    original and drop it."""
    digest = hashlib.sha256(subject.encode() + b"\0" + bytes(body)).hexdigest()[:16]
    return f"antidote:{message_id}:{digest}"


def origin_subject(headers):
    """{"subject": ...} for the subject the message was first published on, or None."""
    subject = (headers or {}).get(SUBJECT_HEADER)
    return {"subject": subject} if subject else None


# --- Text -----------------------------------------------------------------------------------------


def _line(text, limit):
    # Advisory fields come from the server but name things people chose (a consumer, a reason):
    # control characters would let one forge extra lines in what a person reads.
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else " " for c in text)


def _quoted(name):
    return f"'{_line(str(name), NAME_LIMIT)}'"


def _text(value):
    return _line(value, 200) if isinstance(value, str) else _line(json.dumps(value), 200)
