"""A redrive target per request (issue 32, item 5): the request form and the API may name where
each broker's sink sends the messages (an exchange and routing key, a subject, a stream, a URL)
instead of their origin, the default. Checked the same way on both routes, always approved by a
second person (R17, like another queue), shown to the approver as inert text and kept in the
audit trail."""

import re
from urllib.parse import urlencode

import pytest
from django.urls import reverse

from console.audit.models import AuditEntry
from console.decisions.models import ActionRequest
from console.decisions.services import Action, action_request_approve, action_request_create
from tests.browse.conftest import api, login

TARGET = {"exchange": "orders", "routing_key": "orders.retry"}
ONE = {"kind": "message", "id": "m-01"}


def _create(client, **body):
    body.setdefault("action", "reprocess")
    body.setdefault("scope", ONE)
    body.setdefault("comment", "the new consumer listens on orders.retry")
    return client.post("/api/v1/requests", body, format="json")


def _new(**params):
    return reverse("request-new") + "?" + urlencode(params, doseq=True)


# --- The API ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        {"exchange": "orders", "routing_key": "orders.retry"},
        {"exchange": "", "routing_key": "orders"},
        {"subject": "orders.retry"},
        {"stream": "orders:retry"},
        {"url": "https://orders.example/hooks/dead-letters"},
    ],
    ids=["exchange", "default-exchange", "subject", "stream", "url"],
)
def test_an_operator_names_a_target_for_each_broker_through_the_api_and_reads_it_back(
    quarantine, personas, target
):
    response = _create(api(personas["operator"]), redrive_target=target)

    assert response.status_code == 201, response.json()
    assert response.json()["redrive_target"] == target
    assert ActionRequest.objects.get().redrive_target == target


def test_without_a_target_a_request_goes_to_its_origin_and_says_null(quarantine, personas):
    response = _create(api(personas["operator"]))

    assert response.status_code == 201, response.json()
    assert response.json()["redrive_target"] is None
    assert ActionRequest.objects.get().redrive_target is None


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ({"queue": "x"}, "unknown key(s) queue"),
        ({"url": "ftp://files.example/x"}, "redrive_target.url must be an http:// or https://"),
        ({"url": "javascript:alert(1)"}, "redrive_target.url must be an http:// or https://"),
        ({"subject": "s" * 256}, "no more than 255 characters"),
        ({"url": "https://x.example/" + "a" * 2000}, "no more than 2000 characters"),
        ({"subject": ["orders"]}, "Not a valid string"),
        ({"routing_key": "orders"}, "redrive_target.routing_key goes with an exchange"),
        ({"exchange": "orders"}, "redrive_target.exchange goes with a routing_key"),
        ({"subject": "a\nb"}, "redrive_target.subject holds a control character"),
        ("orders", "Invalid data"),
        ({"url": "https://ops:s3cret@x.example/hook"}, "must not hold credentials"),
        ({"url": "https:///no-host"}, "redrive_target.url must be an http:// or https://"),
    ],
    ids=[
        "unknown-key",
        "ftp",
        "javascript",
        "subject-too-long",
        "url-too-long",
        "not-text",
        "key-alone",
        "exchange-alone",
        "control",
        "not-an-object",
        "credentials",
        "no-host",
    ],
)
def test_a_bad_target_is_a_400_naming_the_field_and_its_limit(quarantine, personas, target, said):
    response = _create(api(personas["operator"]), redrive_target=target)

    assert response.status_code == 400, response.json()
    assert response.json()["detail"].startswith("redrive_target")
    assert said in str(response.json()["errors"]["redrive_target"])
    assert not ActionRequest.objects.exists()


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://orders.example/hooks", True),
        ("https://eu.billing.example/in", True),
        ("https://billing.example/in", False),
        ("http://169.254.169.254/latest/meta-data", False),
        ("https://orders.example.evil.test/x", False),
    ],
    ids=["exact", "subdomain", "bare-parent", "metadata", "suffix-trick"],
)
def test_with_redrive_url_hosts_set_a_request_may_name_only_those_hosts(
    quarantine, personas, settings, url, allowed
):
    settings.REDRIVE_URL_HOSTS = ["orders.example", "*.billing.example"]

    response = _create(api(personas["operator"]), redrive_target={"url": url})

    if allowed:
        assert response.status_code == 201, response.json()
    else:
        assert response.status_code == 400, response.json()
        said = str(response.json()["errors"]["redrive_target"])
        assert "is not a host requests may send messages to" in said
        assert "REDRIVE_URL_HOSTS: orders.example, *.billing.example" in said
        assert not ActionRequest.objects.exists()


def test_only_a_reprocess_takes_a_target(quarantine, personas):
    response = _create(api(personas["operator"]), action="fail", redrive_target=TARGET)

    assert response.status_code == 400
    assert response.json() == {"detail": "only reprocess takes a redrive target"}


def test_the_api_schema_documents_the_target_with_an_example(personas):
    schema = api(personas["viewer"]).get("/api/schema/?format=json").content.decode()

    assert "RedriveTarget" in schema
    assert "Reprocess to another RabbitMQ exchange and routing key" in schema


# --- R17 ------------------------------------------------------------------------------------------


def test_a_request_with_a_target_waits_for_approval_even_well_within_the_budget(
    quarantine, personas
):
    response = _create(api(personas["operator"]), redrive_target={"subject": "orders.retry"})

    assert response.status_code == 201, response.json()
    request = ActionRequest.objects.get()
    assert (request.status, request.needs_approval) == (ActionRequest.PENDING, True)
    assert request.approval_reason == (
        "It sends messages elsewhere than their origin, to subject orders.retry: a second "
        "person must approve it."
    )


def test_the_same_request_to_its_origin_runs_without_waiting(quarantine, personas):
    response = _create(api(personas["operator"]))

    assert response.json()["status"] == "approved"


def test_a_target_does_not_spend_the_requesters_budget(quarantine, personas, settings):
    settings.APPROVAL_BUDGET = 1
    operator = personas["operator"]
    action_request_create(
        actor=operator,
        scope=ONE,
        action=Action(kind="reprocess", redrive_target={"stream": "orders:retry"}),
        comment="elsewhere",
    )

    plain = action_request_create(
        actor=operator,
        scope={"kind": "message", "id": "m-02"},
        action=Action(kind="reprocess"),
        comment="plain",
    )

    assert plain.status == ActionRequest.APPROVED


# --- The request form ----------------------------------------------------------------------------


def test_the_form_offers_its_origin_by_default_and_each_brokers_target(index, personas):
    index.message("m-01", '{"order": 1}', state="NDLV")

    page = login(personas["operator"]).get(_new(scope="message", id="m-01")).content.decode()

    assert 'id="redrive-target"' in page
    assert "its origin (default)" in page
    assert re.search(r'name="send_to" value="origin"[^>]*checked', page)
    for name in ("target_exchange", "target_routing_key", "target_subject", "target_stream"):
        assert f'name="{name}"' in page
    assert 'name="target_url"' in page


def test_an_operator_sends_a_request_to_an_exchange_through_the_form_and_it_waits(index, personas):
    index.message("m-01", '{"order": 1}', state="NDLV")
    client = login(personas["operator"])

    response = client.post(
        _new(scope="message", id="m-01"),
        {
            "action": "reprocess",
            "send_to": "exchange",
            "target_exchange": "orders",
            "target_routing_key": "orders.retry",
            "target_subject": "ignored: not chosen",
            "comment": "elsewhere",
        },
    )

    assert response.status_code == 302, response.content.decode()[-2000:]
    request = ActionRequest.objects.get()
    assert request.redrive_target == TARGET
    assert request.status == ActionRequest.PENDING


def test_the_form_to_its_origin_sets_no_target(index, personas):
    index.message("m-01", '{"order": 1}', state="NDLV")

    response = login(personas["operator"]).post(
        _new(scope="message", id="m-01"),
        {"action": "reprocess", "send_to": "origin", "target_url": "https://x", "comment": "x"},
    )

    assert response.status_code == 302
    assert ActionRequest.objects.get().redrive_target is None


@pytest.mark.parametrize(
    ("fields", "field", "said"),
    [
        ({"send_to": "url", "target_url": "ftp://files.example/x"}, "target_url", "http://"),
        ({"send_to": "subject", "target_subject": "s" * 256}, "target_subject", "at most 255"),
        ({"send_to": "stream", "target_stream": ""}, "target_stream", "Name where to send"),
        ({"send_to": "exchange", "target_exchange": "orders"}, "target_exchange", "routing_key"),
    ],
    ids=["bad-url", "too-long", "empty", "exchange-alone"],
)
def test_a_bad_target_in_the_form_is_said_beside_its_field(index, personas, fields, field, said):
    index.message("m-01", '{"order": 1}', state="NDLV")

    response = login(personas["operator"]).post(
        _new(scope="message", id="m-01"), {"action": "reprocess", "comment": "x", **fields}
    )

    assert response.status_code == 400
    errors = response.context["form"].errors
    assert said in " ".join(errors[field]), errors
    assert not ActionRequest.objects.exists()


# --- What the approver sees, and the audit trail ------------------------------------------------


def test_the_approver_sees_the_target_as_inert_text(quarantine, personas):
    target = {"url": "https://x.example/<script>alert(1)</script>"}
    _create(api(personas["operator"]), redrive_target=target)
    request = ActionRequest.objects.get()

    page = login(personas["approver"]).get(reverse("request-detail", args=[request.id]))

    shown = page.content.decode()
    assert "URL https://x.example/&lt;script&gt;alert(1)&lt;/script&gt;" in shown
    assert "<script>alert(1)" not in shown
    assert "not its origin" in shown


def test_the_request_page_says_its_origin_without_a_target(quarantine, personas):
    _create(api(personas["operator"]))
    request = ActionRequest.objects.get()

    page = login(personas["approver"]).get(reverse("request-detail", args=[request.id]))

    assert 'id="request-redrive-target">its origin<' in page.content.decode()


def test_the_requests_audit_entries_name_the_target(quarantine, personas):
    _create(api(personas["operator"]), redrive_target=TARGET)
    request = ActionRequest.objects.get()
    action_request_approve(actor=personas["approver"], request=request, comment="ok")

    entries = {
        e.action: e.details
        for e in AuditEntry.objects.filter(target_type="request", target_id=str(request.id))
    }

    assert entries["request.created"]["redrive_target"] == TARGET
    assert entries["request.approved"]["redrive_target"] == TARGET
