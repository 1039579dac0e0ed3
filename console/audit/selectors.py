"""Reading the audit trail back, and checking it."""

from dataclasses import dataclass, field

from console.audit.models import AuditCheckpoint, AuditEntry
from console.audit.services import GENESIS, entry_hash


@dataclass
class Verification:
    entries: int = 0
    problems: list = field(default_factory=list)

    @property
    def ok(self):
        return not self.problems


def audit_verify():
    """Walk the chain in sequence order and report every entry that does not fit: altered
    (its hash is not its content's), deleted (a gap, or a broken link), inserted or reordered
    (a link that points at another entry than the one before it), and any checkpoint the
    chain no longer matches (entries cut off its end)."""
    result = Verification()
    expected_seq = 1
    prev_hash = GENESIS
    hashes = {}
    for entry in AuditEntry.objects.order_by("seq").iterator(chunk_size=2000):
        result.entries += 1
        if entry.seq != expected_seq:
            result.problems.append(
                f"entry #{entry.seq}: expected #{expected_seq} here: entries are missing"
            )
        recomputed = entry_hash(
            seq=entry.seq,
            at=entry.at,
            actor=entry.actor,
            action=entry.action,
            target_type=entry.target_type,
            target_id=entry.target_id,
            details=entry.details,
            prev_hash=entry.prev_hash,
        )
        if recomputed != entry.hash:
            result.problems.append(f"entry #{entry.seq}: altered (its hash does not match it)")
        if entry.prev_hash != prev_hash:
            result.problems.append(
                f"entry #{entry.seq}: does not follow the entry before it "
                "(deleted, inserted or reordered entries)"
            )
        hashes[entry.seq] = entry.hash
        prev_hash = entry.hash
        expected_seq = entry.seq + 1
    for checkpoint in AuditCheckpoint.objects.order_by("seq"):
        if hashes.get(checkpoint.seq) != checkpoint.hash:
            result.problems.append(
                f"checkpoint #{checkpoint.seq} of {checkpoint.at:%Y-%m-%d %H:%M:%S}: the chain "
                "no longer holds that entry as it was (entries removed or rewritten)"
            )
    return result
