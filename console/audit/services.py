"""Appending to the audit trail, and checkpointing its head."""

import hashlib
import json
from datetime import UTC

from django.db import transaction
from django.utils import timezone

from console.advisory_locks import xact_lock
from console.audit.checkpoints import checkpoint_file_write
from console.audit.keys import canonical, current_key, key_id, mac
from console.audit.models import AuditCheckpoint, AuditEntry
from console.audit.signals import recorded

GENESIS = "0" * 64
AUDIT_LOCK = 0x41554454  # an arbitrary, fixed advisory-lock key for the chain's head


def _hashed_fields(*, seq, at, actor, action, target_type, target_id, details, prev_hash):
    return {
        "seq": seq,
        "at": at.astimezone(UTC).isoformat(timespec="microseconds"),
        "actor": actor,
        "action": action,
        "target_type": target_type,
        "target_id": target_id,
        "details": details,
        "prev_hash": prev_hash,
    }


def entry_hash(*, key=None, **fields):
    """The hash an entry must carry: HMAC-SHA256, keyed with `key` (AUDIT_KEY unless given), of
    its fields (seq, at, actor, action, target_type, target_id, details, prev_hash) in a
    canonical JSON form."""
    return mac(key or current_key(), _hashed_fields(**fields))


def legacy_entry_hash(**fields):
    """The hash of an entry written before hashes were keyed: SHA-256 of the same JSON."""
    return hashlib.sha256(canonical(_hashed_fields(**fields))).hexdigest()


def _normalized(details):
    # What goes in must hash the same after a round trip through the JSON column.
    return json.loads(json.dumps(details or {}, default=str))


def audit_record(*, actor, action, target_type="", target_id="", details=None):
    """Append one entry. Appends are serialized so each links to the one before it."""
    name = getattr(actor, "get_username", lambda: str(actor or "system"))() or "anonymous"
    details = _normalized(details)
    key = current_key()
    with transaction.atomic():
        xact_lock(AUDIT_LOCK, "the audit chain's lock")
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
        entry = AuditEntry.objects.create(
            **fields,
            hash=entry_hash(key=key, **fields),
            scheme=AuditEntry.KEYED,
            key_id=key_id(key),
        )
        recorded.send(sender=AuditEntry, entry=entry)
    return entry


def audit_checkpoint():
    """Record the chain's head, in the database and in a new signed file outside it; returns the
    checkpoint, or None for an empty trail. A file that cannot be written undoes the checkpoint,
    so that the failure is seen and no checkpoint stands without its file."""
    with transaction.atomic():
        head = AuditEntry.objects.order_by("-seq").only("seq", "hash").first()
        if head is None:
            return None
        checkpoint = AuditCheckpoint.objects.create(seq=head.seq, hash=head.hash)
        checkpoint_file_write(seq=checkpoint.seq, hash=checkpoint.hash, at=checkpoint.at)
    return checkpoint


def audit_checkpoint_take(*, actor, via):
    """A checkpoint someone asked for (the audit page): the trail records who, and the checkpoint
    then covers that very entry. Returns the checkpoint. One transaction: a file that cannot be
    written undoes the record too, so the trail never claims a checkpoint that is not there."""
    with transaction.atomic():
        audit_record(actor=actor, action="audit.checkpoint_taken", details={"via": via})
        return audit_checkpoint()
