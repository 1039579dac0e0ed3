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


# --- The audit screen, its API and its export -----------------------------------------------------

# The filters, as the screen, the API and the export take them. `action` is exact, or a prefix
# when it ends in "." or "*" ("request." is every request action).
FILTER_FIELDS = ("actor", "actor_contains", "action", "target_type", "target_id", "since", "until")
PAGE_SIZE = 50
EXPORT_CHUNK = 2000


def filters_from(data):
    """The filters set in `data` (a cleaned form's or serializer's), as the selectors take them."""
    return {name: data[name] for name in FILTER_FIELDS if data.get(name) not in (None, "")}


def audit_queryset(*, filters):
    """Entries matching `filters` (see FILTER_FIELDS; unset ones are ignored), unordered."""
    qs = AuditEntry.objects.all()
    for name in ("actor", "target_type", "target_id"):
        if filters.get(name):
            qs = qs.filter(**{name: filters[name]})
    if filters.get("actor_contains"):
        qs = qs.filter(actor__icontains=filters["actor_contains"])
    action = filters.get("action")
    if action:
        if action.endswith(("*", ".")):
            qs = qs.filter(action__startswith=action.rstrip("*"))
        else:
            qs = qs.filter(action=action)
    if filters.get("since"):
        qs = qs.filter(at__gte=filters["since"])
    if filters.get("until"):
        qs = qs.filter(at__lt=filters["until"])
    return qs


@dataclass
class AuditPage:
    rows: list
    next_cursor: int | None = None  # pass as `after` for older entries
    prev_cursor: int | None = None  # pass as `before` for newer entries


def audit_page(*, filters, after=None, before=None, size=PAGE_SIZE):
    """One page of matching entries, newest first, by keyset on seq: `after` a seq gives the
    older entries that follow it on screen, `before` a seq the newer ones that precede it. Never
    OFFSET and never a count, so any page of a long trail costs what the first does."""
    qs = audit_queryset(filters=filters)
    backward = before is not None
    if backward:
        rows = list(qs.filter(seq__gt=before).order_by("seq")[: size + 1])
    elif after is not None:
        rows = list(qs.filter(seq__lt=after).order_by("-seq")[: size + 1])
    else:
        rows = list(qs.order_by("-seq")[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    if backward:
        rows.reverse()
    page = AuditPage(rows=rows)
    if not rows:
        return page
    if backward:
        page.prev_cursor = rows[0].seq if more else None
        page.next_cursor = rows[-1].seq
    else:
        page.next_cursor = rows[-1].seq if more else None
        page.prev_cursor = rows[0].seq if after is not None else None
    return page


def audit_export_rows(*, filters, up_to):
    """Matching entries up to seq `up_to`, oldest first (the chain's own order, so each row's
    prev_hash is the hash of the row before it when nothing is filtered out), read in chunks."""
    qs = audit_queryset(filters=filters).filter(seq__lte=up_to).order_by("seq")
    return qs.iterator(chunk_size=EXPORT_CHUNK)


@dataclass(frozen=True)
class ChainStatus:
    head: AuditEntry | None  # the newest entry
    checkpoint: AuditCheckpoint | None  # the latest checkpoint
    checkpoint_holds: bool | None  # the chain still has that entry with that hash; None: none


def audit_chain_status():
    """The chain's head and whether its latest checkpoint still matches it: two indexed reads,
    cheap enough for every page view. The full walk is audit_verify()."""
    head = AuditEntry.objects.order_by("-seq").only("seq", "at", "hash").first()
    checkpoint = AuditCheckpoint.objects.order_by("-at", "-pk").first()
    holds = None
    if checkpoint is not None:
        holds = AuditEntry.objects.filter(seq=checkpoint.seq, hash=checkpoint.hash).exists()
    return ChainStatus(head=head, checkpoint=checkpoint, checkpoint_holds=holds)
