"""Standard Webhooks signatures (https://www.standardwebhooks.com): `webhook-id`,
`webhook-timestamp` and `webhook-signature` (`v1,` + base64 of HMAC-SHA256 over
"id.timestamp.body"), keyed with a `whsec_...` secret read from the environment by the process
that sends. Values are text: the sender writes them as HTTP wants."""

import base64
import binascii
import hashlib
import hmac
import os
import time
from datetime import UTC, datetime

from standardwebhooks import Webhook

from workers.brokers.base import DeliveryFailed

SECRET_PREFIX = "whsec_"  # noqa: S105 - the prefix of every secret, no secret


class Signer:
    """Standard Webhooks signatures with one secret."""

    def __init__(self, key):
        self.key = key
        self.webhook = Webhook(key)

    @classmethod
    def from_environment(cls, name):
        secret = os.environ.get(name)
        if not secret:
            raise DeliveryFailed(f"{name} is not set: it must hold the whsec_... signing secret")
        if not secret.startswith(SECRET_PREFIX):
            raise DeliveryFailed(f"{name} is not a Standard Webhooks secret (whsec_...)")
        try:
            key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if not key:
            raise DeliveryFailed(f"{name} is not a Standard Webhooks secret: whsec_ + base64")
        return cls(key)

    def headers(self, message_id, body):
        timestamp = int(time.time())
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            # The library signs text only; the spec signs the body's bytes, whatever they are.
            signed = f"{message_id}.{timestamp}.".encode() + body
            digest = hmac.new(self.key, signed, hashlib.sha256).digest()
            signature = "v1," + base64.b64encode(digest).decode("ascii")
        else:
            moment = datetime.fromtimestamp(timestamp, tz=UTC)
            signature = self.webhook.sign(msg_id=message_id, timestamp=moment, data=text)
        return {
            "webhook-id": message_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signature,
        }
