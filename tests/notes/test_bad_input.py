"""Bad input to notes and investigations, on the pages and through the API: each refused with a
sentence that says why, nothing changed, nothing recorded."""

import pytest
from django.urls import reverse

from console.audit.models import AuditEntry
from console.notes import services
from console.notes.models import GROUP, MESSAGE, NOTE_MAX, Investigation, Note
from tests.notes.conftest import api, login


def _recorded():
    """The trail's entries about notes and investigations (signing in is recorded too)."""
    return AuditEntry.objects.filter(action__regex=r"^(note|investigation)\.").count()


@pytest.fixture
def quiet(world):
    """The trail as it stands: a refused request adds nothing to it."""
    return _recorded()


def _unchanged(before):
    assert _recorded() == before
    assert not Note.objects.exists()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("x" * (NOTE_MAX + 1), f"no more than {NOTE_MAX} characters"),
        ("", "This field may not be blank."),
        ("  \n\t ", "a note needs some text"),
    ],
)
def test_the_api_refuses_a_note_too_long_or_blank(quiet, personas, text, why):
    response = api(personas["operator"]).post(
        "/api/v1/notes/messages/order-1", {"text": text}, format="json"
    )

    assert response.status_code == 400
    assert why in response.json()["detail"]
    _unchanged(quiet)


def test_the_page_refuses_a_note_too_long_and_says_why(quiet, personas):
    response = login(personas["operator"]).post(
        reverse("note-add"),
        {"kind": MESSAGE, "target_id": "order-1", "text": "x" * (NOTE_MAX + 1)},
        follow=True,
    )

    assert response.status_code == 200
    assert f"at most {NOTE_MAX:,} characters; this one has {NOTE_MAX + 1:,}" in (
        response.content.decode()
    )
    _unchanged(quiet)


def test_the_note_field_tells_the_browser_its_limit(world, personas):
    html = login(personas["operator"]).get(reverse("message-detail", args=["order-1"])).content
    assert f'maxlength="{NOTE_MAX}"' in html.decode()


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "ftp://tracker.test/OPS-1",
        "//tracker.test/OPS-1",
        "tracker.test/OPS-1",
        "https://",
        "https://tracker.test/" + "x" * 500,
    ],
)
def test_a_ticket_link_is_an_http_or_https_url_or_nothing(quiet, personas, url):
    response = api(personas["operator"]).post(
        "/api/v1/investigations/take/groups/g1", {"ticket_url": url}, format="json"
    )

    assert response.status_code == 400
    assert "ticket link" in response.json()["detail"] or "ticket_url" in response.json()["detail"]
    assert not Investigation.objects.exists()
    _unchanged(quiet)


def test_changing_the_ticket_to_a_bad_link_keeps_the_old_one(world, personas):
    services.investigation_take(
        actor=personas["operator"], kind=GROUP, target_id="g1", ticket_url="https://t.test/1"
    )
    before = _recorded()

    response = login(personas["operator"]).post(
        reverse("investigation-ticket"),
        {"kind": GROUP, "target_id": "g1", "ticket_url": "javascript:alert(1)"},
        follow=True,
    )

    assert "a ticket link is an http:// or https:// URL" in response.content.decode()
    assert Investigation.objects.get().ticket_url == "https://t.test/1"
    assert _recorded() == before


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/api/v1/notes/messages/no-such-message", 404),
        ("/api/v1/notes/groups/no-such-group", 404),
        ("/api/v1/notes/queues/orders", 404),
        ("/api/v1/notes/messages/order-1%00", 404),
        ("/api/v1/investigations/messages/no-such-message", 404),
    ],
)
def test_an_unknown_target_or_kind_is_not_found(world, personas, path, status):
    assert api(personas["operator"]).get(path).status_code == status
    assert api(personas["operator"]).post(path, {"text": "x"}, format="json").status_code in (
        status,
        405,
    )


def test_the_api_says_why_a_take_or_a_release_cannot_be(world, personas):
    client = api(personas["operator"])
    services.investigation_take(actor=personas["approver"], kind=MESSAGE, target_id="order-2")

    taken = client.post("/api/v1/investigations/take/messages/order-2", {}, format="json")
    released = client.post("/api/v1/investigations/release/messages/order-3", {}, format="json")
    handed = client.post(
        "/api/v1/investigations/hand-over/messages/order-2", {"to": "operator"}, format="json"
    )

    assert (taken.status_code, taken.json()) == (
        400,
        {"detail": "this message is already under investigation by approver"},
    )
    assert (released.status_code, released.json()) == (
        400,
        {"detail": "this message is not under investigation"},
    )
    assert handed.status_code == 403
    assert "approver's investigation" in handed.json()["detail"]


def test_the_owner_filter_mine_needs_someone_to_ask(world, personas):
    # A page or an API call always has someone; only a stored filter lacks one (see
    # test_owner_filters), and a filter no longer than a username.
    response = api(personas["viewer"]).get("/api/v1/index/messages", {"owner": "x" * 151})
    assert response.status_code == 400
    assert "owner" in response.json()["errors"]


def test_a_page_form_with_a_missing_or_bad_target_is_not_found(world, personas):
    client = login(personas["operator"])
    for fields in (
        {"kind": "queue", "target_id": "orders"},
        {"kind": MESSAGE, "target_id": ""},
        {"kind": MESSAGE, "target_id": "x" * 201},
        {"target_id": "order-1"},
    ):
        assert client.post(reverse("note-add"), {**fields, "text": "x"}).status_code == 404
    assert not Note.objects.exists()
