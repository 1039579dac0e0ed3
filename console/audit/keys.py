"""The audit key: AUDIT_KEY signs the chain's entries and its checkpoint files. The database
never holds it, so whoever can only write to the database cannot sign anything.

Only AUDIT_KEY signs. A rotation moves the old key to AUDIT_KEYS_OLD, which then still verifies
what it signed; an entry or file whose key is in neither is reported as written with another key.
"""

import hashlib
import hmac
import json

from django.conf import settings

_KEY_ID_MESSAGE = b"antidote-audit-key-id"


def canonical(data):
    """`data` as the bytes that are hashed or signed: JSON with sorted keys and no spaces."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode()


def mac(key, data):
    return hmac.new(key.encode(), canonical(data), hashlib.sha256).hexdigest()


def key_id(key):
    """A short name for a key that gives nothing of it away, stored with what it signs."""
    return hmac.new(key.encode(), _KEY_ID_MESSAGE, hashlib.sha256).hexdigest()[:8]


def current_key():
    return settings.AUDIT_KEY


def verifying_keys():
    """Every key that may have signed an entry or a file, by key id: AUDIT_KEY and the old ones."""
    keys = {key_id(key): key for key in settings.AUDIT_KEYS_OLD}
    keys[key_id(settings.AUDIT_KEY)] = settings.AUDIT_KEY
    return keys
