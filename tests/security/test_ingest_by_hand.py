"""Issue 43, point 9 (R17 walked around by re-ingest): an operator fails a message, then sends an
edited copy in by hand, so that the edit never meets the approver R17 asks for. Against the
running console's API and pages: a person sends messages in only into a queue two
administrators agreed to (R19), and what they send says so on its page and in the audit trail.
Applications (service accounts) send as before, into every queue."""

import hashlib

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from console.access.models import IngestRight, RoleGrant
from console.accounts.tokens.services import token_create
from console.audit.models import AuditEntry
from console.ingest.models import MessageKey
from tests.browse.conftest import Index
from tests.conftest import settled

pytestmark = pytest.mark.django_db

URL = "/api/v1/messages"
EDITED = {"id": "order-1-fixed", "queue": "orders", "body": '{"order": 1, "amount": 0}'}


@pytest.fixture
def queues(personas, lake_root):
    index = Index()
    index.queue("orders")
    index.queue("payments")
    # The message the operator would like to see go through, edited, without an approver.
    index.message("order-1", '{"order": 1, "amount": 1000}', state="NDLV")
    return personas


@pytest.fixture
def admin2(personas):
    user = User.objects.create_user("admin2", password="pw-admin2-1234")
    user.groups.add(Group.objects.get(name="admin"))
    return settled(user)


def _signed_in(user):
    client = APIClient()
    client.force_login(user)
    return client


def _page(user, message_id):
    client = Client()
    client.force_login(user)
    return client.get(f"/messages/{message_id}/").content.decode()


@pytest.mark.parametrize("person", ["operator", "approver", "admin", "viewer"])
def test_no_person_sends_an_edited_copy_in_by_default(queues, person):
    response = _signed_in(queues[person]).post(URL, EDITED, format="json")

    assert response.status_code == 403
    assert response.json()["detail"].startswith(
        "a person sends messages in only into a queue an administrator let them send into by "
        "hand (asked on the role grants page, confirmed by a second administrator)"
    )
    assert not MessageKey.objects.filter(message_id="order-1-fixed").exists()


def test_an_administrator_alone_cannot_let_an_operator_send_by_hand(queues, admin2):
    admin, operator = queues["admin"], queues["operator"]
    console = Client()
    console.force_login(admin)

    asked = console.post("/role-grants/", {"user": "operator", "queue": "orders"})
    grant = RoleGrant.objects.get()
    own_confirm = console.post(f"/role-grants/{grant.id}/confirm")
    refused = _signed_in(operator).post(URL, EDITED, format="json")
    # Nor for themselves: an administrator asks for nobody's rights of their own.
    own = console.post("/role-grants/", {"user": "admin", "queue": "orders"})

    assert asked.status_code == 302
    assert (grant.status, grant.queue.name, grant.role) == ("pending", "orders", None)
    assert own_confirm.status_code == 403
    assert refused.status_code == 403
    assert own.status_code == 400 and "nobody changes their own roles" in own.content.decode()
    assert not IngestRight.objects.exists()
    asked_entry = AuditEntry.objects.get(action="role_grant.requested")
    assert asked_entry.actor == "admin"
    assert asked_entry.details["queue"] == "orders" and asked_entry.details["role"] is None


def test_with_a_second_administrator_a_person_sends_into_that_queue_only_and_says_so(
    queues, admin2
):
    operator, viewer = queues["operator"], queues["viewer"]
    asked = _signed_in(queues["admin"]).post(
        "/api/v1/role-grants",
        {"user": "operator", "queue": "orders", "comment": "replays the night's orders"},
        format="json",
    )
    confirmed = _signed_in(admin2).post(
        f"/api/v1/role-grants/{asked.json()['id']}/confirm", {}, format="json"
    )
    client = _signed_in(operator)

    sent = client.post(URL, [EDITED, {**EDITED, "id": "order-2-fixed"}], format="json")
    elsewhere = client.post(
        URL, [{**EDITED, "id": "p-1", "queue": "payments"}, EDITED], format="json"
    )

    assert asked.status_code == 201 and asked.json()["queue"] == "orders"
    assert confirmed.status_code == 200 and confirmed.json()["status"] == "confirmed"
    assert sent.status_code == 201, sent.json()
    assert elsewhere.status_code == 403
    assert "not into 'payments'" in elsewhere.json()["detail"]
    assert not MessageKey.objects.filter(message_id="p-1").exists()
    # The audit trail: who, which queue, how many, which ids and their hash.
    [entry] = AuditEntry.objects.filter(action="messages.sent_by_hand")
    ids = ["order-1-fixed", "order-2-fixed"]
    assert (entry.actor, entry.target_type, entry.target_id) == ("operator", "queue", "orders")
    assert entry.details["queues"] == {
        "orders": {
            "accepted": 2,
            "ids": ids,
            "ids_sha256": hashlib.sha256("\n".join(ids).encode()).hexdigest(),
        }
    }
    assert (entry.details["accepted"], entry.details["refused"]) == (2, 0)
    given = AuditEntry.objects.get(action="user.ingest_rights_changed")
    assert given.actor == "admin2" and given.details["added"] == ["orders"]
    # Its page says a person sent it in, and who.
    page = _page(viewer, "order-1-fixed")
    assert 'id="message-sent-by-person"' in page
    assert "Sent in by hand: <strong>operator</strong>" in page


def test_taking_the_right_away_counts_at_the_next_call(queues, admin2):
    operator = queues["operator"]
    IngestRight.objects.create(
        user=operator,
        queue=Index().queue("orders"),
        since=timezone.now(),
    )
    client = _signed_in(operator)
    assert client.post(URL, EDITED, format="json").status_code == 201

    console = Client()
    console.force_login(queues["admin"])
    taken = console.post(
        "/role-grants/ingest-rights/withdraw", {"user": "operator", "queue": "orders"}
    )

    assert taken.status_code == 302
    again = client.post(URL, {**EDITED, "id": "order-3-fixed"}, format="json")
    assert again.status_code == 403
    entry = AuditEntry.objects.get(action="user.ingest_rights_changed")
    assert (entry.actor, entry.details["removed"]) == ("admin", ["orders"])


def test_an_application_still_sends_into_every_queue_and_its_messages_say_nothing_of_a_person(
    queues,
):
    _, token = token_create(actor=queues["admin"], user=queues["application"], name="shop")
    producer = APIClient(headers={"Authorization": f"Token {token}"})

    sent = producer.post(
        URL,
        [{**EDITED, "id": "a-1"}, {**EDITED, "id": "a-2", "queue": "payments"}],
        format="json",
    )

    assert sent.status_code == 201, sent.json()
    assert not AuditEntry.objects.filter(action="messages.sent_by_hand").exists()
    assert 'id="message-sent-by-person"' not in _page(queues["viewer"], "a-1")


def test_a_service_account_is_given_no_sending_by_hand(queues):
    response = _signed_in(queues["admin"]).post(
        "/api/v1/role-grants", {"user": "application", "queue": "orders"}, format="json"
    )

    assert response.status_code == 400
    assert "application is a service account" in response.json()["detail"]
