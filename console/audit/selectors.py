"""Reading the audit trail back, and checking it."""

from dataclasses import dataclass, field

from console.audit.checkpoints import FORGED, OTHER_KEY, SIGNED, checkpoint_dir, checkpoint_files
from console.audit.keys import verifying_keys
from console.audit.models import AuditCheckpoint, AuditEntry
from console.audit.services import GENESIS, entry_hash, legacy_entry_hash


@dataclass
class Verification:
    entries: int = 0
    problems: list = field(default_factory=list)

    @property
    def ok(self):
        return not self.problems


def _hash_problem(entry, keys, first_keyed):
    """What is wrong with an entry's own hash, or None. `first_keyed`: the seq of the first keyed
    entry before it, if any."""
    fields = dict(
        seq=entry.seq,
        at=entry.at,
        actor=entry.actor,
        action=entry.action,
        target_type=entry.target_type,
        target_id=entry.target_id,
        details=entry.details,
        prev_hash=entry.prev_hash,
    )
    if entry.scheme == AuditEntry.LEGACY:
        # Unkeyed hashes are anyone's to compute: they are trusted only where they were written,
        # before the chain was keyed. One after a keyed entry was put there by someone else.
        if first_keyed is not None:
            return (
                f"entry #{entry.seq}: an unkeyed hash after keyed ones (from #{first_keyed}): "
                "a downgrade (entries rewritten)"
            )
        recomputed = legacy_entry_hash(**fields)
    elif entry.scheme == AuditEntry.KEYED:
        key = keys.get(entry.key_id)
        if key is None:
            return (
                f"entry #{entry.seq}: written with another key (key id {entry.key_id!r}) than "
                "AUDIT_KEY and AUDIT_KEYS_OLD: it cannot be checked (a key missing, or forged)"
            )
        recomputed = entry_hash(key=key, **fields)
    else:
        return f"entry #{entry.seq}: an unknown hash scheme {entry.scheme!r} (altered)"
    if recomputed != entry.hash:
        return f"entry #{entry.seq}: altered (its hash does not match it)"
    return None


def audit_verify():
    """Walk the chain in sequence order and report every entry that does not fit: altered
    (its hash is not its content's under the audit key), deleted (a gap, or a broken link),
    inserted or reordered (a link that points at another entry than the one before it), and an
    unkeyed entry after keyed ones. Then every checkpoint, in the database and in its folder:
    one the chain no longer matches (entries cut off its end, or rewritten), one in the database
    without its file or unlike it, and a file that is forged or signed with another key."""
    result = Verification()
    keys = verifying_keys()
    expected_seq = 1
    prev_hash = GENESIS
    first_keyed = None
    hashes = {}
    for entry in AuditEntry.objects.order_by("seq").iterator(chunk_size=2000):
        result.entries += 1
        if entry.seq != expected_seq:
            result.problems.append(
                f"entry #{entry.seq}: expected #{expected_seq} here: entries are missing"
            )
        problem = _hash_problem(entry, keys, first_keyed)
        if problem:
            result.problems.append(problem)
        if entry.prev_hash != prev_hash:
            result.problems.append(
                f"entry #{entry.seq}: does not follow the entry before it "
                "(deleted, inserted or reordered entries)"
            )
        if entry.scheme == AuditEntry.KEYED and first_keyed is None:
            first_keyed = entry.seq
        hashes[entry.seq] = entry.hash
        prev_hash = entry.hash
        expected_seq = entry.seq + 1
    result.problems += _checkpoint_problems(hashes, first_keyed, keys)
    return result


def _checkpoint_problems(hashes, first_keyed, keys):
    """Every checkpoint, in the database and in files, checked against the chain (`hashes`, by
    seq, keyed from `first_keyed` on) and against each other. Files are what a database writer
    cannot forge: one whose entry the chain no longer holds is reported whether or not its row
    is still in the database."""
    folder = checkpoint_dir().name
    problems = []
    files = checkpoint_files(keys=keys)
    # (seq, at) -> hash, from the files whose signature holds.
    filed = {(f.seq, f.at): f.hash for f in files if f.status == SIGNED}
    for checkpoint in AuditCheckpoint.objects.order_by("seq", "at"):
        label = f"checkpoint #{checkpoint.seq} of {checkpoint.at:%Y-%m-%d %H:%M:%S}"
        if hashes.get(checkpoint.seq) != checkpoint.hash:
            problems.append(
                f"{label}: the chain no longer holds that entry as it was "
                "(entries removed or rewritten)"
            )
        on_file = filed.get((checkpoint.seq, checkpoint.at))
        unkeyed_head = checkpoint.seq in hashes and (
            first_keyed is None or checkpoint.seq < first_keyed
        )
        if on_file is None and not unkeyed_head:
            # A checkpoint of an unkeyed head was taken before checkpoint files, most likely.
            problems.append(f"{label}: no file in {folder}")
        elif on_file is not None and on_file != checkpoint.hash:
            problems.append(f"{label}: unlike its file in {folder} (the checkpoint was rewritten)")
    for f in files:
        if f.status == FORGED:
            problems.append(
                f"checkpoint file {f.name}: forged (unreadable, or its signature does not match it)"
            )
        elif f.status == OTHER_KEY:
            problems.append(
                f"checkpoint file {f.name}: signed with another key (key id {f.key_id!r}) than "
                "AUDIT_KEY and AUDIT_KEYS_OLD: it cannot be checked"
            )
        elif hashes.get(f.seq) != f.hash:
            problems.append(
                f"checkpoint file {f.name} (#{f.seq} of {f.at:%Y-%m-%d %H:%M:%S}): the chain no "
                "longer holds that entry as it was (entries removed or rewritten)"
            )
    return problems


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
