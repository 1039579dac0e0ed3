"""A reprocess's own redrive target: where the broker sinks send its messages instead of their
origin (issue 32). Checked here for the form and the API alike, said in words for the approver
and the audit trail, and carried to the sinks by the execution (console.decisions.execution) in
the `redrive_target` of the versions it writes, never in a header (R18)."""

from django.conf import settings
from django.core.exceptions import ValidationError

from workers.outbound import (
    DestinationError,
    OutboundRefused,
    destination_check,
    destination_parse,
)

# A reprocess's own redrive target (R13 "to its origin" is the default): what each broker's
# sink reads of it, with the longest value each may be. AMQP names an exchange or a routing key
# in a short string (255 bytes); NATS and Redis take longer names, but no real one is.
REDRIVE_TARGET_KEYS = {
    "exchange": 255,  # RabbitMQ, with routing_key
    "routing_key": 255,
    "subject": 255,  # NATS JetStream
    "stream": 255,  # Redis Streams
    "url": 2000,  # HTTP delivery
}


def redrive_target_clean(target):
    """A request's redrive target, checked: a JSON object of REDRIVE_TARGET_KEYS with text
    values, each within its limit, a URL http or https; None (the origin) when empty. Each error
    names the key and the limit, as the form and the API show it."""
    if target is None or target == {}:
        return None
    if not isinstance(target, dict):
        raise ValidationError(
            'redrive_target is an object such as {"exchange": "orders", "routing_key": '
            '"new"}, {"subject": ...}, {"stream": ...} or {"url": ...}'
        )
    unknown = sorted(str(key) for key in target if key not in REDRIVE_TARGET_KEYS)
    if unknown:
        raise ValidationError(
            f"redrive_target: unknown key(s) {', '.join(unknown)}; use "
            f"{', '.join(REDRIVE_TARGET_KEYS)}"
        )
    cleaned = {}
    for key, value in target.items():
        if not isinstance(value, str):
            raise ValidationError(f"redrive_target.{key} must be text")
        value = value.strip()
        limit = REDRIVE_TARGET_KEYS[key]
        if len(value) > limit:
            raise ValidationError(f"redrive_target.{key} is longer than {limit} characters")
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise ValidationError(f"redrive_target.{key} holds a control character")
        if value:
            cleaned[key] = value
    url = cleaned.get("url")
    if url is not None:
        _url_check(url)
    if "routing_key" in cleaned and "exchange" not in cleaned and "exchange" not in target:
        # An empty exchange is RabbitMQ's default one: say it with "exchange": "".
        raise ValidationError(
            'redrive_target.routing_key goes with an exchange ("" for the default exchange)'
        )
    if "exchange" in target and "routing_key" not in cleaned:
        raise ValidationError("redrive_target.exchange goes with a routing_key")
    if "exchange" in target and isinstance(target["exchange"], str):
        cleaned["exchange"] = target["exchange"].strip()
    return cleaned or None


def _url_check(url):
    # Read as the HTTP sink's client reads it (workers.outbound): a URL that another reader
    # could take for another host is refused, so the host checked below is the one sent to.
    try:
        destination = destination_parse(url)
    except DestinationError as exc:
        # Credentials too: the request, its audit entry and the approver's page would show them.
        raise ValidationError(
            "redrive_target.url must be an http:// or https:// URL, such as "
            f"https://orders.example/hooks/dead-letters; this one {exc}"
        ) from None
    host = destination.host
    allowed = settings.REDRIVE_URL_HOSTS
    if allowed and not any(_host_matches(host, pattern) for pattern in allowed):
        raise ValidationError(
            f"redrive_target.url: {host} is not a host requests may send messages to "
            f"(REDRIVE_URL_HOSTS: {', '.join(allowed)})"
        )
    # Its address now (the HTTP sink checks again when it sends, which is the check that
    # counts: DNS changes).
    try:
        destination_check(url, allowance=settings.OUTBOUND_ALLOW_INTERNAL, resolve=True)
    except OutboundRefused as exc:
        raise ValidationError(f"redrive_target.url: {exc}") from None


def _host_matches(host, pattern):
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


def redrive_target_said(target):
    """A redrive target in words, for the approver and the audit trail."""
    if not target:
        return "its origin"
    parts = []
    if "exchange" in target or "routing_key" in target:
        exchange = target.get("exchange") or "(the default exchange)"
        parts.append(f"exchange {exchange} with routing key {target.get('routing_key', '')}")
    for key, noun in (("subject", "subject"), ("stream", "stream"), ("url", "URL")):
        if key in target:
            parts.append(f"{noun} {target[key]}")
    return ", ".join(parts)
