"""Appending to the audit trail, and checkpointing its head."""

import hashlib
import json
from datetime import UTC

from django.db import transaction
from django.utils import timezone

from console.audit.models import AuditCheckpoint, AuditEntry

GENESIS = "0" * 64
AUDIT_LOCK = 0x41554454  # an arbitrary, fixed advisory-lock key for the chain's head


def entry_hash(*, seq, at, actor, action, target_type, target_id, details, prev_hash):
    """The hash an entry must carry: SHA-256 of its fields in a canonical JSON form."""
    canonical = json.dumps(
        {
            "seq": seq,
            "at": at.astimezone(UTC).isoformat(timespec="microseconds"),
            "actor": actor,
            "action": action,
            "target_type": target_type,
            "target_id": target_id,
            "details": details,
            "prev_hash": prev_hash,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _normalized(details):
    # What goes in must hash the same after a round trip through the JSON column.
    return json.loads(json.dumps(details or {}, default=str))


def audit_record(*, actor, action, target_type="", target_id="", details=None):
    """Append one entry. Appends are serialized so each links to the one before it."""
    name = getattr(actor, "get_username", lambda: str(actor or "system"))() or "anonymous"
    details = _normalized(details)
    with transaction.atomic():
        conn = transaction.get_connection()
        if conn.vendor == "postgresql":
            with conn.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [AUDIT_LOCK])
        head = AuditEntry.objects.order_by("-seq").only("seq", "hash").first()
        seq = head.seq + 1 if head else 1
        prev_hash = head.hash if head else GENESIS
        at = timezone.now()
        fields = dict(
            seq=seq,
            at=at,
            actor=name[:150],
            action=action,
            target_type=target_type,
            target_id=str(target_id)[:300],
            details=details,
            prev_hash=prev_hash,
        )
        return AuditEntry.objects.create(**fields, hash=entry_hash(**fields))


def audit_checkpoint():
    """Record the chain's head; returns the checkpoint, or None for an empty trail."""
    head = AuditEntry.objects.order_by("-seq").only("seq", "hash").first()
    if head is None:
        return None
    return AuditCheckpoint.objects.create(seq=head.seq, hash=head.hash)
