"""Sending a message from the console (issue 46, point 5), as Service Bus Explorer does: a person
with a right to send into a queue by hand (R19: two administrators agreed) sends a new message,
or a copy of one, through the same checks as the API, and the audit trail records who sent what
and which message it was copied from. Without such a right there is no form and no link; a
queue outside one's rights is refused, whatever the form was made to post."""

import base64

import pytest
from django.urls import reverse
from django.utils import timezone

from console.access.models import IngestRight
from console.audit.models import AuditEntry
from console.ingest.models import MessageKey
from tests.browse.conftest import Index, login

pytestmark = pytest.mark.django_db

SEND = "/messages/send"


@pytest.fixture
def queues(personas, lake_root):
    """orders and payments; the operator may send into orders by hand; order-1 quarantined,
    with headers, and a binary message bin-1."""
    index = Index()
    orders = index.queue("orders")
    index.queue("payments")
    index.message(
        "order-1",
        '{"order": 1, "amount": 1000}',
        state="NDLV",
        ingest={
            "headers": {"trace": "abc"},
            "content_type": "application/json",
            "conversation_id": "c-1",
        },
    )
    index.message(
        "bin-1", base64.b64encode(b"\x00\xff\x10").decode(), ingest={"body_encoding": "base64"}
    )
    IngestRight.objects.create(user=personas["operator"], queue=orders, since=timezone.now())
    return personas


def _sent(**fields):
    return {
        "queue": "orders",
        "message_id": "by-hand-1",
        "body": '{"order": 2}',
        "body_encoding": "text",
        "content_type": "application/json",
        "headers": "",
        "conversation_id": "",
        "sender": "",
        **fields,
    }


def test_an_operator_with_the_right_sends_a_new_message_and_it_is_audited(queues):
    operator = login(queues["operator"])
    listed = operator.get(reverse("message-list")).content.decode()
    assert 'id="message-send-link"' in listed
    form = operator.get(SEND)
    assert form.status_code == 200
    assert '<option value="orders"' in form.content.decode()
    assert '<option value="payments"' not in form.content.decode()

    sent = operator.post(SEND, _sent(headers='{"ticket": "SHOP-9"}'))
    assert sent.status_code == 302
    assert sent.url == reverse("message-detail", args=["by-hand-1"])
    key = MessageKey.objects.get(message_id="by-hand-1")
    assert key.queue == "orders"
    (entry,) = AuditEntry.objects.filter(action="messages.sent_by_hand")
    assert (entry.actor, entry.target_id) == ("operator", "orders")
    assert entry.details["queues"]["orders"]["ids"] == ["by-hand-1"]
    assert "copied_from" not in entry.details
    page = operator.get(reverse("message-detail", args=["by-hand-1"])).content.decode()
    assert "Sent in by hand: <strong>operator</strong>" in page


def test_a_copy_starts_from_the_message_and_the_audit_says_which(queues):
    operator = login(queues["operator"])
    page = operator.get(reverse("message-detail", args=["order-1"])).content.decode()
    assert 'id="message-copy-link"' in page
    form = operator.get(SEND, {"copy": "order-1"}).content.decode()
    assert "A copy of order-1" in form
    assert "{&quot;order&quot;: 1, &quot;amount&quot;: 1000}" in form
    assert "&quot;trace&quot;" in form
    assert 'value="c-1"' in form
    # The body was read: recorded as any read of a body is.
    viewed = AuditEntry.objects.filter(action="message.body_viewed").order_by("seq").last()
    assert (viewed.target_id, viewed.details["via"]) == ("order-1", "copy")

    sent = operator.post(
        SEND,
        _sent(
            message_id="order-1-copy",
            body='{"order": 1, "amount": 10}',
            headers='{"trace": "abc"}',
            conversation_id="c-1",
            copy_of="order-1",
        ),
    )
    assert sent.status_code == 302
    (entry,) = AuditEntry.objects.filter(action="messages.sent_by_hand")
    assert entry.details["copied_from"] == "order-1"


def test_a_binary_body_is_copied_as_base64(queues):
    form = login(queues["operator"]).get(SEND, {"copy": "bin-1"}).content.decode()
    assert base64.b64encode(b"\x00\xff\x10").decode() in form
    assert '<option value="base64" selected>' in form


def test_a_queue_outside_ones_rights_is_refused_whatever_the_form_posts(queues):
    answer = login(queues["operator"]).post(SEND, _sent(queue="payments"))
    assert answer.status_code == 400
    assert "Select a valid choice" in answer.content.decode()
    assert not MessageKey.objects.filter(message_id="by-hand-1").exists()
    assert not AuditEntry.objects.filter(action="messages.sent_by_hand").exists()


def test_what_ingest_refuses_is_said_on_the_form(queues):
    operator = login(queues["operator"])
    bad_headers = operator.post(SEND, _sent(headers="{nope"))
    assert bad_headers.status_code == 400
    assert "not JSON: Expecting property name enclosed in double quotes" in (
        bad_headers.content.decode()
    )
    bad_id = operator.post(SEND, _sent(message_id="tab\there"))
    assert bad_id.status_code == 400
    assert "id must be printable text" in bad_id.content.decode()
    assert not MessageKey.objects.filter(message_id__in=["by-hand-1", "tab\there"]).exists()


@pytest.mark.parametrize("person", ["viewer", "approver", "admin", "auditor"])
def test_without_a_right_to_send_there_is_no_form_and_no_link(queues, person):
    client = login(queues[person])
    assert client.get(SEND).status_code == 403
    assert client.post(SEND, _sent()).status_code == 403
    page = client.get(reverse("message-detail", args=["order-1"])).content.decode()
    assert 'id="message-copy-link"' not in page
    assert not MessageKey.objects.filter(message_id="by-hand-1").exists()
