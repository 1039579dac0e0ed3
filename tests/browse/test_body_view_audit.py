"""Reading a message's body is recorded in the audit trail (who, which message, where), for the
detail page, the raw download and the API; showing metadata only is not. Looking still changes
nothing about the message (R12)."""

import pytest
from django.forms.models import model_to_dict
from django.urls import reverse

from console.audit.models import AuditEntry
from console.audit.selectors import audit_verify
from console.ingest.models import MessageKey
from console.readmodels.models import MessageIndex
from tests.browse.conftest import api, login


def _body_views():
    return list(
        AuditEntry.objects.filter(action="message.body_viewed")
        .order_by("seq")
        .values_list("actor", "target_type", "target_id", "details")
    )


def _message_state(message_id):
    return (
        model_to_dict(MessageIndex.objects.get(message_id=message_id)),
        model_to_dict(MessageKey.objects.get(message_id=message_id)),
    )


@pytest.mark.parametrize(
    ("via", "get"),
    [
        ("page", lambda user, m: login(user).get(reverse("message-detail", args=[m]))),
        ("raw", lambda user, m: login(user).get(reverse("message-raw", args=[m]))),
        ("api", lambda user, m: api(user).get(f"/api/v1/messages/{m}/body")),
    ],
)
def test_a_body_read_is_recorded_with_who_which_and_where(seeded, personas, via, get):
    before = _message_state(seeded)

    response = get(personas["operator"], seeded)

    assert response.status_code == 200
    assert _body_views() == [("operator", "message", seeded, {"via": via})]
    assert _message_state(seeded) == before
    assert audit_verify().ok


@pytest.mark.parametrize("role", ["viewer", "admin"])
def test_the_detail_page_without_the_body_permission_records_nothing(seeded, personas, role):
    response = login(personas[role]).get(reverse("message-detail", args=[seeded]))

    assert response.status_code == 200
    assert _body_views() == []


@pytest.mark.parametrize("role", ["viewer", "admin", "auditor"])
def test_a_refused_body_read_records_nothing(seeded, personas, role):
    assert login(personas[role]).get(reverse("message-raw", args=[seeded])).status_code == 403
    assert api(personas[role]).get(f"/api/v1/messages/{seeded}/body").status_code == 403
    assert _body_views() == []


def test_an_unknown_message_records_nothing(seeded, personas):
    client = login(personas["approver"])

    assert client.get(reverse("message-raw", args=["nope"])).status_code == 404
    assert client.get(reverse("message-detail", args=["nope"])).status_code == 404
    assert api(personas["approver"]).get("/api/v1/messages/nope/body").status_code == 404
    assert _body_views() == []


def test_each_read_is_its_own_entry(seeded, personas):
    client = login(personas["approver"])
    client.get(reverse("message-detail", args=[seeded]))
    client.get(reverse("message-detail", args=[seeded]))

    assert [v[0] for v in _body_views()] == ["approver", "approver"]
