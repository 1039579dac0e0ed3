"""The audit trail: append-only entries, each carrying the hash of the one before it.

An entry's hash covers its sequence number, time, actor, action, target, details and the previous
entry's hash, so altering, deleting, inserting or reordering entries breaks the chain where it
happened (`manage.py audit_verify`). The hash is an HMAC keyed with AUDIT_KEY, which the database
does not hold: whoever writes to the database cannot recompute the chain after a change. Entries
written before keyed hashes carry a plain SHA-256 (scheme "sha256"); they are accepted only before
the first keyed entry. Checkpoints of the chain's head, taken periodically and also signed into
files outside the database (console/audit/checkpoints.py), catch the one thing a chain alone
cannot: cutting entries off its end."""

from django.db import models


class AuditEntry(models.Model):
    LEGACY = "sha256"
    KEYED = "hmac-sha256"
    SCHEMES = [(LEGACY, "SHA-256, unkeyed (before keyed hashes)"), (KEYED, "HMAC-SHA256")]

    seq = models.BigIntegerField(unique=True)
    at = models.DateTimeField()
    actor = models.CharField(max_length=150)  # a username, or "system"; outlives the user
    action = models.CharField(max_length=60)
    target_type = models.CharField(max_length=60, blank=True, default="")
    target_id = models.CharField(max_length=300, blank=True, default="")
    details = models.JSONField(default=dict)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)
    scheme = models.CharField(max_length=12, choices=SCHEMES, default=KEYED)
    # Which key signed a keyed entry (console.audit.services.key_id), so that an entry signed with
    # a key the verifier lacks is reported as such rather than as altered. Blank when legacy.
    key_id = models.CharField(max_length=8, blank=True, default="")

    class Meta:
        ordering = ["seq"]
        indexes = [
            models.Index(fields=["action", "seq"], name="ix_audit_action"),
            models.Index(fields=["actor", "seq"], name="ix_audit_actor"),
            models.Index(fields=["at"], name="ix_audit_at"),
            models.Index(fields=["target_type", "target_id"], name="ix_audit_target"),
        ]
        permissions = [("export_auditentry", "Can export the audit trail")]

    def __str__(self):
        return f"#{self.seq} {self.at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action}"


class AuditCheckpoint(models.Model):
    """The chain's head at a moment: its sequence number and hash."""

    seq = models.BigIntegerField()
    hash = models.CharField(max_length=64)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-seq"]

    def __str__(self):
        return f"checkpoint #{self.seq}"
