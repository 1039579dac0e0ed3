"""The audit chain is keyed with AUDIT_KEY and anchored by signed checkpoint files outside the
database. A database writer who rewrites an entry and recomputes the chain after it, who cuts
entries off its end and deletes the checkpoints, or who downgrades entries to unkeyed hashes is
caught; so are a missing, a forged and a foreign checkpoint file."""

import json

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from console.audit.checkpoints import checkpoint_file_write
from console.audit.keys import key_id, mac
from console.audit.models import AuditCheckpoint, AuditEntry
from console.audit.selectors import audit_verify
from console.audit.services import (
    GENESIS,
    audit_checkpoint,
    audit_record,
    entry_hash,
    legacy_entry_hash,
)
from tests.audit.trail import HASHED

pytestmark = pytest.mark.django_db

KEY = "test-audit-key-0123456789abcdef0123456789"
MALLORYS_KEY = "mallory-has-write-access-to-the-database"


@pytest.fixture(autouse=True)
def folder(settings, tmp_path):
    settings.AUDIT_KEY = KEY
    settings.AUDIT_KEYS_OLD = []
    settings.AUDIT_CHECKPOINT_DIR = tmp_path / "audit-checkpoints"
    return settings.AUDIT_CHECKPOINT_DIR


def _record(n=1):
    for _ in range(n):
        audit_record(actor="alice", action="request.created", details={"comment": "ship it"})


@pytest.fixture
def trail():
    """Six keyed entries, checkpointed at #3 and at #6."""
    _record(3)
    audit_checkpoint()
    _record(3)
    audit_checkpoint()


def _fields(entry):
    return {name: getattr(entry, name) for name in HASHED}


def _rechain(from_seq, sign, **also):
    """What a database writer can do: recompute every hash from `from_seq` on with `sign`, each
    entry linked to the one before it, and move the database's checkpoints along."""
    before = AuditEntry.objects.filter(seq__lt=from_seq).order_by("-seq").first()
    prev_hash = before.hash if before else GENESIS
    for entry in AuditEntry.objects.filter(seq__gte=from_seq).order_by("seq"):
        fields = {**_fields(entry), "prev_hash": prev_hash}
        prev_hash = sign(**fields)
        AuditEntry.objects.filter(pk=entry.pk).update(
            prev_hash=fields["prev_hash"], hash=prev_hash, **also
        )
    for checkpoint in AuditCheckpoint.objects.all():
        head = AuditEntry.objects.get(seq=checkpoint.seq)
        AuditCheckpoint.objects.filter(pk=checkpoint.pk).update(hash=head.hash)


def _legacy(n):
    """`n` entries as they were written before hashes were keyed, appended to the chain."""
    for _ in range(n):
        head = AuditEntry.objects.order_by("-seq").first()
        entry = AuditEntry(
            seq=head.seq + 1 if head else 1,
            at=timezone.now(),
            actor="bob",
            action="login",
            prev_hash=head.hash if head else GENESIS,
            scheme=AuditEntry.LEGACY,
        )
        entry.hash = legacy_entry_hash(**_fields(entry))
        entry.save()


def _problems():
    result = audit_verify()
    assert not result.ok
    with pytest.raises(CommandError, match="NOT intact"):
        call_command("audit_verify")
    return result.problems


def _has(problems, fragment):
    return any(fragment in p for p in problems)


def test_a_keyed_trail_and_its_checkpoint_files_verify(trail, folder, capsys):
    assert audit_verify().ok
    call_command("audit_verify")
    assert "audit trail intact: 6 entries" in capsys.readouterr().out

    entries = AuditEntry.objects.all()
    assert {(e.scheme, e.key_id) for e in entries} == {(AuditEntry.KEYED, key_id(KEY))}
    files = sorted(folder.iterdir())
    assert [json.loads(f.read_text())["seq"] for f in files] == [3, 6]
    assert set(json.loads(files[0].read_text())) == {"seq", "hash", "at", "key_id", "mac"}


def test_the_checkpoint_command_files_the_checkpoint(trail, folder, capsys):
    call_command("audit_checkpoint")

    assert "checkpoint at entry #6, filed in audit-checkpoints" in capsys.readouterr().out
    assert len(list(folder.iterdir())) == 3
    assert audit_verify().ok


def test_it_catches_a_rewrite_recomputed_with_plain_sha256(trail):
    AuditEntry.objects.filter(seq=2).update(details={"comment": "never mind"})
    _rechain(2, legacy_entry_hash)

    problems = _problems()

    assert _has(problems, "entry #2: altered")
    assert _has(problems, "entry #6: altered")
    assert not _has(problems, "does not follow")  # the links were recomputed too
    assert _has(problems, "(#3 of ")  # the checkpoint files still hold the old hashes
    assert _has(problems, "(#6 of ")


def test_it_catches_a_rewrite_recomputed_with_another_key(trail):
    AuditEntry.objects.filter(seq=2).update(details={"comment": "never mind"})
    _rechain(2, lambda **fields: entry_hash(key=MALLORYS_KEY, **fields))

    problems = _problems()

    assert _has(problems, "entry #2: altered")
    assert _has(problems, "checkpoint file checkpoint-000000000006-")


def test_it_says_so_when_the_rewrite_claims_another_key(trail):
    _rechain(2, lambda **fields: entry_hash(key=MALLORYS_KEY, **fields), key_id="0badc0de")

    problems = _problems()

    assert _has(problems, "entry #2: written with another key (key id '0badc0de')")
    assert _has(problems, "checkpoint file checkpoint-000000000003-")


def test_it_catches_keyed_entries_rewritten_as_unkeyed_ones(trail):
    _rechain(2, legacy_entry_hash, scheme=AuditEntry.LEGACY, key_id="")

    problems = _problems()

    assert _has(problems, "entry #2: an unkeyed hash after keyed ones (from #1): a downgrade")


def test_the_files_catch_a_whole_trail_rewritten_as_unkeyed(trail):
    # Unkeyed from the first entry on, the chain alone would look like one from before keys.
    _rechain(1, legacy_entry_hash, scheme=AuditEntry.LEGACY, key_id="")

    problems = _problems()

    assert _has(problems, "checkpoint file checkpoint-000000000003-")
    assert _has(problems, "checkpoint file checkpoint-000000000006-")


def test_the_files_catch_entries_cut_off_the_end_with_the_checkpoints_deleted(trail):
    AuditEntry.objects.filter(seq__gte=5).delete()
    AuditCheckpoint.objects.all().delete()

    problems = _problems()

    assert len(problems) == 1
    assert problems[0].startswith("checkpoint file checkpoint-000000000006-")
    assert "entries removed or rewritten" in problems[0]


def test_the_files_catch_a_cut_end_written_again(trail):
    # The end cut off and new entries appended in its place: a chain of six that holds.
    AuditEntry.objects.filter(seq__gte=4).delete()
    AuditCheckpoint.objects.all().delete()
    _record(3)

    problems = _problems()

    assert len(problems) == 1
    assert problems[0].startswith("checkpoint file checkpoint-000000000006-")


def test_a_deleted_checkpoint_file_is_reported_missing(trail, folder, tmp_path):
    newest = sorted(folder.iterdir())[-1]
    newest.unlink()

    problems = _problems()

    assert len(problems) == 1
    assert problems[0].startswith("checkpoint #6 of ")
    assert problems[0].endswith(": no file in audit-checkpoints")
    assert str(tmp_path) not in problems[0]


def test_a_rewritten_database_checkpoint_is_unlike_its_file(trail):
    AuditCheckpoint.objects.filter(seq=6).update(hash="f" * 64)

    problems = _problems()

    assert _has(problems, "checkpoint #6 of ")
    assert _has(problems, "unlike its file in audit-checkpoints")


def test_a_forged_checkpoint_file_is_caught(trail, folder):
    # After a rewrite, the forger writes a file for the new head, without the key.
    AuditEntry.objects.filter(seq=2).update(details={"comment": "never mind"})
    _rechain(2, lambda **fields: entry_hash(key=MALLORYS_KEY, **fields))
    head = AuditEntry.objects.get(seq=6)
    body = {"seq": 6, "hash": head.hash, "at": head.at.isoformat(), "key_id": key_id(KEY)}
    body["mac"] = mac(MALLORYS_KEY, body)
    (folder / "checkpoint-000000000006-20990101T000000000000Z.json").write_text(json.dumps(body))
    (folder / "checkpoint-000000000007-20990101T000000000000Z.json").write_text("not JSON")

    problems = _problems()

    assert _has(problems, "checkpoint-000000000006-20990101T000000000000Z.json: forged")
    assert _has(problems, "checkpoint-000000000007-20990101T000000000000Z.json: forged")


def test_an_edited_checkpoint_file_is_caught(trail, folder):
    path = sorted(folder.iterdir())[-1]
    body = json.loads(path.read_text())
    body["hash"] = AuditEntry.objects.get(seq=6).hash[::-1]
    path.write_text(json.dumps(body))

    assert _has(_problems(), f"checkpoint file {path.name}: forged")


def test_a_legacy_prefix_followed_by_keyed_entries_verifies():
    _legacy(3)
    # A checkpoint taken before checkpoint files: none is expected for it.
    AuditCheckpoint.objects.create(seq=3, hash=AuditEntry.objects.get(seq=3).hash)
    _record(3)
    audit_checkpoint()

    assert audit_verify().ok
    schemes = list(AuditEntry.objects.values_list("scheme", flat=True))
    assert schemes == [AuditEntry.LEGACY] * 3 + [AuditEntry.KEYED] * 3


def test_a_legacy_entry_after_keyed_ones_is_caught():
    _legacy(2)
    _record(2)
    _legacy(1)

    problems = _problems()

    assert problems == [
        "entry #5: an unkeyed hash after keyed ones (from #3): a downgrade (entries rewritten)"
    ]


def test_rewriting_the_legacy_prefix_breaks_the_first_keyed_link():
    _legacy(3)
    _record(2)
    AuditEntry.objects.filter(seq=2).update(actor="mallory")
    for entry in AuditEntry.objects.filter(seq__in=(2, 3)).order_by("seq"):
        prev = AuditEntry.objects.get(seq=entry.seq - 1).hash
        fields = {**_fields(entry), "prev_hash": prev}
        AuditEntry.objects.filter(pk=entry.pk).update(
            prev_hash=prev, hash=legacy_entry_hash(**fields)
        )

    problems = _problems()

    assert problems == [
        "entry #4: does not follow the entry before it (deleted, inserted or reordered entries)"
    ]


def test_the_files_catch_a_legacy_prefix_rewritten_with_every_entry_after_it():
    # Every keyed entry downgraded too, the chain alone is one from before keys: the file is not.
    _legacy(3)
    _record(2)
    audit_checkpoint()
    AuditEntry.objects.filter(seq=2).update(actor="mallory")
    _rechain(2, legacy_entry_hash, scheme=AuditEntry.LEGACY, key_id="")

    problems = _problems()

    assert _has(problems, "checkpoint #5 of ")  # moved along in the database: unlike its file
    assert _has(problems, "checkpoint file checkpoint-000000000005-")


def test_entries_and_files_of_a_rotated_key_verify_with_the_old_key(trail, settings):
    settings.AUDIT_KEY = "the-new-audit-key-abcdefghijklmnopqrstuvwxyz"
    _record(2)
    audit_checkpoint()

    problems = _problems()
    assert _has(problems, f"entry #1: written with another key (key id '{key_id(KEY)}')")
    assert _has(problems, "checkpoint-000000000003-")
    assert _has(problems, "signed with another key")
    assert not _has(problems, "entry #7")

    settings.AUDIT_KEYS_OLD = [KEY]
    assert audit_verify().ok


def test_a_checkpoint_file_is_never_overwritten(trail, folder):
    checkpoint = AuditCheckpoint.objects.get(seq=6)
    before = {p.name: p.read_text() for p in folder.iterdir()}

    with pytest.raises(FileExistsError):
        checkpoint_file_write(seq=6, hash="f" * 64, at=checkpoint.at)

    assert {p.name: p.read_text() for p in folder.iterdir()} == before


def test_a_checkpoint_whose_file_cannot_be_written_is_not_recorded(settings, tmp_path):
    _record(2)
    settings.AUDIT_CHECKPOINT_DIR = tmp_path / "a-file"
    settings.AUDIT_CHECKPOINT_DIR.write_text("in the way")

    with pytest.raises(OSError):
        audit_checkpoint()

    assert not AuditCheckpoint.objects.exists()


def test_the_folder_defaults_to_one_in_the_lake(settings, lake_root):
    settings.AUDIT_CHECKPOINT_DIR = None
    _record()

    audit_checkpoint()

    assert len(list((lake_root / "audit-checkpoints").iterdir())) == 1
    assert audit_verify().ok
