"""Who may read and write notes and investigations, on the pages and through the API, per role.

Reading: viewer, operator, approver, admin, auditor (the auditor through the API: it has no
message screens). Writing a note and taking an investigation: operator and approver. Handing
over or releasing someone else's: approver. Anonymous: the login page, or 401."""

import pytest
from django.urls import reverse

from console.notes import services
from console.notes.models import GROUP, MESSAGE, Investigation, Note
from tests.notes.conftest import api, login
from tests.roles import ROLES, role_matrix, who

READERS = {"viewer", "operator", "approver", "admin", "auditor"}
WRITERS = {"operator", "approver"}


def _expected_api(role, allowed, ok):
    if role is None:
        return 401
    return ok if role in allowed else 403


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_reading_notes_and_the_investigation_through_the_api(world, personas, role):
    services.note_add(actor=personas["operator"], kind=MESSAGE, target_id="order-1", text="hi")
    client = api(personas[role] if role else None)

    notes = client.get("/api/v1/notes/messages/order-1")
    state = client.get("/api/v1/investigations/groups/g1")

    assert notes.status_code == _expected_api(role, READERS, 200)
    assert state.status_code == _expected_api(role, READERS, 200)
    if notes.status_code == 200:
        assert [n["text"] for n in notes.json()["results"]] == ["hi"]


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_writing_a_note_through_the_api(world, personas, role):
    client = api(personas[role] if role else None)

    response = client.post("/api/v1/notes/groups/g1", {"text": "looking"}, format="json")

    assert response.status_code == _expected_api(role, WRITERS, 201)
    assert Note.objects.filter(kind=GROUP, target_id="g1").count() == (role in WRITERS)


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_taking_an_investigation_through_the_api(world, personas, role):
    client = api(personas[role] if role else None)

    response = client.post("/api/v1/investigations/take/messages/order-3", {}, format="json")

    assert response.status_code == _expected_api(role, WRITERS, 200)
    if role in WRITERS:
        assert response.json() == {
            "kind": "messages",
            "target_id": "order-3",
            "investigation": {
                "owner": role,
                "since": response.json()["investigation"]["since"],
                "ticket_url": "",
            },
            "owner": role,
            "via_group": False,
        }
    assert Investigation.objects.exists() == (role in WRITERS)


@pytest.mark.parametrize(
    ("owner", "role", "status"),
    [
        ("operator", "operator", 200),  # one's own
        ("operator", "approver", 200),  # an approver, for a colleague who is away
        ("approver", "operator", 403),
        ("operator", "viewer", 403),
        ("operator", "admin", 403),
        ("operator", None, 401),
    ],
)
def test_releasing_an_investigation_through_the_api(world, personas, owner, role, status):
    services.investigation_take(actor=personas[owner], kind=GROUP, target_id="g2")
    client = api(personas[role] if role else None)

    response = client.post("/api/v1/investigations/release/groups/g2", {}, format="json")

    assert response.status_code == status
    assert Investigation.objects.exists() == (status != 200)


# (name, url, fields); each posts to a page of the panel.
PAGE_POSTS = [
    ("note", "note-add", {"text": "seen"}),
    ("take", "investigation-take", {"ticket_url": ""}),
]


@role_matrix(("name", "url", "fields"), PAGE_POSTS)
def test_the_panels_forms_answer_each_role_as_its_permissions_say(
    world, personas, role, name, url, fields
):
    client = login(personas[role] if role else None)

    response = client.post(reverse(url), {"kind": MESSAGE, "target_id": "order-4", **fields})

    if role is None:
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))
    elif role in WRITERS:
        assert response.status_code == 302
        assert response["Location"] == reverse("message-detail", args=["order-4"]) + "#notes"
    else:
        assert response.status_code == 403
    changed = Note.objects.exists() or Investigation.objects.exists()
    assert changed == (role in WRITERS)


@pytest.mark.parametrize("role", ("operator", "approver"))
def test_the_hand_over_page_form_follows_the_same_rule_as_the_service(world, personas, role):
    services.investigation_take(actor=personas["approver"], kind=MESSAGE, target_id="order-5")
    client = login(personas[role])

    response = client.post(
        reverse("investigation-hand-over"),
        {"kind": MESSAGE, "target_id": "order-5", "to": "operator"},
        follow=True,
    )

    owner = Investigation.objects.get().owner.username
    if role == "approver":
        assert owner == "operator"
        assert "Handed over to operator." in response.content.decode()
    else:
        assert owner == "approver"
        assert "only they, or an approver, may hand it over" in response.content.decode()


@pytest.mark.parametrize("role", ("auditor", "application", "outsider"))
def test_the_owner_filter_is_not_for_those_who_may_not_read_owners(world, personas, role):
    # They do not see the lists at all; a filter is no side door.
    assert api(personas[role]).get("/api/v1/index/messages?owner=unowned").status_code == 403
    assert api(personas[role]).get("/api/v1/groups?owner=unowned").status_code == 403
