"""Notes and investigations, through their services: every change is in the audit trail, and a
change that is refused leaves neither the change nor an entry."""

import threading

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection

from console.audit.models import AuditEntry
from console.audit.selectors import audit_verify
from console.notes import services
from console.notes.models import GROUP, MESSAGE, Investigation, Note
from tests.notes.conftest import trail


def test_a_note_is_stored_with_its_author_and_time_and_recorded(world, personas):
    note = services.note_add(
        actor=personas["operator"], kind=MESSAGE, target_id="order-1", text="seen it\r\ntwice"
    )

    stored = Note.objects.get()
    assert (stored.author_name, stored.text, stored.kind, stored.target_id) == (
        "operator",
        "seen it\ntwice",
        MESSAGE,
        "order-1",
    )
    assert stored.created_at is not None
    assert trail(action_prefix="note.") == [
        ("operator", "note.added", MESSAGE, "order-1", {"note": note.pk, "text": "seen it\ntwice"})
    ]


def test_taking_handing_over_changing_the_ticket_and_releasing_are_each_recorded(world, personas):
    operator, approver = personas["operator"], personas["approver"]

    services.investigation_take(
        actor=operator, kind=GROUP, target_id="g1", ticket_url="https://tracker.test/OPS-1"
    )
    services.investigation_ticket_set(
        actor=operator, kind=GROUP, target_id="g1", ticket_url="https://tracker.test/OPS-2"
    )
    services.investigation_hand_over(actor=operator, kind=GROUP, target_id="g1", to="approver")
    services.investigation_release(actor=approver, kind=GROUP, target_id="g1")

    entries = trail(action_prefix="investigation.")
    assert [(actor, action, kind, target) for actor, action, kind, target, _ in entries] == [
        ("operator", "investigation.taken", GROUP, "g1"),
        ("operator", "investigation.ticket_changed", GROUP, "g1"),
        ("operator", "investigation.handed_over", GROUP, "g1"),
        ("approver", "investigation.released", GROUP, "g1"),
    ]
    assert entries[0][4] == {"owner": "operator", "ticket_url": "https://tracker.test/OPS-1"}
    assert entries[1][4] == {
        "before": "https://tracker.test/OPS-1",
        "after": "https://tracker.test/OPS-2",
    }
    assert entries[2][4] == {"from": "operator", "to": "approver"}
    assert entries[3][4]["owner"] == "approver"
    assert entries[3][4]["ticket_url"] == "https://tracker.test/OPS-2"
    assert not Investigation.objects.exists()
    assert audit_verify().ok


def test_one_owner_at_a_time_a_second_take_is_refused_and_not_recorded(world, personas):
    services.investigation_take(actor=personas["operator"], kind=MESSAGE, target_id="order-2")
    before = AuditEntry.objects.count()

    with pytest.raises(ValidationError, match="already under investigation by operator"):
        services.investigation_take(actor=personas["approver"], kind=MESSAGE, target_id="order-2")

    assert Investigation.objects.get().owner == personas["operator"]
    assert AuditEntry.objects.count() == before


def test_a_refused_note_leaves_no_note_and_no_entry(world, personas):
    with pytest.raises(ValidationError):
        services.note_add(actor=personas["operator"], kind=MESSAGE, target_id="order-1", text=" ")
    with pytest.raises(ValidationError, match="no such message"):
        services.note_add(actor=personas["operator"], kind=MESSAGE, target_id="nope", text="x")

    assert not Note.objects.exists()
    assert not AuditEntry.objects.filter(action__startswith="note.").exists()


def test_an_operator_may_not_hand_over_or_release_a_colleagues_investigation(world, personas):
    services.investigation_take(actor=personas["approver"], kind=GROUP, target_id="g2")

    with pytest.raises(PermissionDenied):
        services.investigation_release(actor=personas["operator"], kind=GROUP, target_id="g2")
    with pytest.raises(PermissionDenied):
        services.investigation_hand_over(
            actor=personas["operator"], kind=GROUP, target_id="g2", to="operator"
        )
    with pytest.raises(PermissionDenied):
        services.investigation_ticket_set(
            actor=personas["operator"], kind=GROUP, target_id="g2", ticket_url="https://t.test/1"
        )

    assert Investigation.objects.get().owner == personas["approver"]
    assert not AuditEntry.objects.exclude(action="investigation.taken").filter(
        action__startswith="investigation."
    )


def test_an_approver_may_release_an_operators_investigation(world, personas):
    services.investigation_take(actor=personas["operator"], kind=MESSAGE, target_id="order-4")

    services.investigation_release(actor=personas["approver"], kind=MESSAGE, target_id="order-4")

    assert not Investigation.objects.exists()
    assert trail(action_prefix="investigation.released")[0][:2] == (
        "approver",
        "investigation.released",
    )


def test_an_investigation_is_handed_over_only_to_someone_who_may_investigate(world, personas):
    services.investigation_take(actor=personas["operator"], kind=MESSAGE, target_id="order-1")

    for who in ("viewer", "admin", "auditor", "nobody-by-that-name", "operator"):
        with pytest.raises(ValidationError):
            services.investigation_hand_over(
                actor=personas["operator"], kind=MESSAGE, target_id="order-1", to=who
            )

    assert Investigation.objects.get().owner == personas["operator"]
    assert not AuditEntry.objects.filter(action="investigation.handed_over").exists()


def test_the_roles_that_may_not_write_are_refused_by_the_services_too(world, personas):
    for role in ("viewer", "admin", "auditor", "application", "outsider"):
        with pytest.raises(PermissionDenied):
            services.note_add(actor=personas[role], kind=MESSAGE, target_id="order-1", text="x")
        with pytest.raises(PermissionDenied):
            services.investigation_take(actor=personas[role], kind=MESSAGE, target_id="order-1")

    assert not Note.objects.exists()
    assert not Investigation.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_people_taking_at_once_leave_one_owner_and_one_entry(lake_root, personas):
    # Each take runs in its own thread and connection, released together: the database's
    # constraint, not a read before the write, decides who wins.
    from tests.notes.conftest import Index

    Index().group("g-race")
    barrier = threading.Barrier(2)
    outcomes = {}

    def take(role):
        try:
            barrier.wait(timeout=10)
            services.investigation_take(actor=personas[role], kind=GROUP, target_id="g-race")
            outcomes[role] = "taken"
        except ValidationError as exc:
            outcomes[role] = exc.messages[0]
        finally:
            connection.close()

    threads = [threading.Thread(target=take, args=(role,)) for role in ("operator", "approver")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    owner = Investigation.objects.get(kind=GROUP, target_id="g-race").owner.username
    loser = "approver" if owner == "operator" else "operator"
    assert outcomes == {
        owner: "taken",
        loser: f"this failure group is already under investigation by {owner}",
    }
    assert [e[:2] for e in trail(action_prefix="investigation.")] == [
        (owner, "investigation.taken")
    ]
