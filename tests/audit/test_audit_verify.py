"""`audit_verify` finds an altered, a deleted, an inserted and a reordered entry, and entries cut
off the end of a checkpointed chain."""

import pytest
from django.core.management import CommandError, call_command

from console.audit.models import AuditEntry
from console.audit.selectors import audit_verify
from console.audit.services import audit_checkpoint, audit_record, entry_hash

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _checkpoint_folder(settings, tmp_path):
    settings.AUDIT_CHECKPOINT_DIR = tmp_path / "audit-checkpoints"


@pytest.fixture
def trail():
    for n in range(1, 7):
        audit_record(
            actor="alice",
            action="request.created",
            target_type="request",
            target_id=str(n),
            details={"count": n, "comment": "ship it"},
        )
    return list(AuditEntry.objects.order_by("seq"))


def _verify_fails_with(fragment):
    result = audit_verify()
    assert not result.ok
    assert any(fragment in p for p in result.problems), result.problems
    with pytest.raises(CommandError, match="NOT intact"):
        call_command("audit_verify")
    return result


def test_an_intact_trail_verifies(trail, capsys):
    assert audit_verify().ok
    call_command("audit_verify")
    assert "audit trail intact: 6 entries" in capsys.readouterr().out


def test_it_catches_an_altered_entry(trail):
    AuditEntry.objects.filter(seq=3).update(details={"count": 3000, "comment": "ship it"})
    result = _verify_fails_with("entry #3: altered")
    assert len(result.problems) == 1


def test_it_catches_a_deleted_entry(trail):
    AuditEntry.objects.filter(seq=4).delete()
    _verify_fails_with("entry #5: expected #4 here")
    _verify_fails_with("entry #5: does not follow")


def test_it_catches_an_inserted_entry_even_with_a_valid_hash_of_its_own(trail):
    # The forger makes room after #2 and gives the new entry a correct hash and link to #2.
    for entry in reversed(trail[2:]):
        AuditEntry.objects.filter(pk=entry.pk).update(seq=entry.seq + 1)
    fields = dict(
        seq=3,
        at=trail[2].at,
        actor="mallory",
        action="request.approved",
        target_type="request",
        target_id="1",
        details={},
        prev_hash=trail[1].hash,
    )
    AuditEntry.objects.create(**fields, hash=entry_hash(**fields))
    result = _verify_fails_with("does not follow the entry before it")
    assert any(p.startswith("entry #4: altered") for p in result.problems)


def test_it_catches_reordered_entries(trail):
    a, b = trail[1], trail[4]
    AuditEntry.objects.filter(pk=a.pk).update(seq=-1)
    AuditEntry.objects.filter(pk=b.pk).update(seq=a.seq)
    AuditEntry.objects.filter(pk=a.pk).update(seq=b.seq)
    _verify_fails_with("does not follow the entry before it")


def test_a_checkpoint_catches_entries_cut_off_the_end(trail):
    audit_checkpoint()
    AuditEntry.objects.filter(seq__gte=5).delete()
    _verify_fails_with("checkpoint #6")


def test_logins_and_failed_logins_are_recorded(client, django_user_model, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    django_user_model.objects.create_user("alice", password="pw-alice-1234")
    assert client.login(username="alice", password="pw-alice-1234")
    assert not client.login(username="alice", password="wrong")
    logins = AuditEntry.objects.filter(action__startswith="login")
    actions = list(logins.values_list("actor", "action", "target_id"))
    assert actions == [("alice", "login", ""), ("anonymous", "login.failed", "alice")]
    assert "wrong" not in str(list(AuditEntry.objects.values_list("details", flat=True)))
    assert audit_verify().ok
