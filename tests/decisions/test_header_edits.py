"""One message's headers edited with its body (issue 46, point 3; R13, R18): every header may be
edited but those the product reads, which an edit keeps as they are: its own (what a broker
source recorded of where it drained the message, which the sinks send it back by), a broker's
dead-letter record (which RabbitMQ's redrive follows) and the names its queues lock. So nothing
typed into an edit, a header or a patched body, chooses where a message goes. The new version
carries the edited headers, its lineage shows their changes, and the handler is handed them."""

import json
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.urls import reverse

from console.audit.models import AuditEntry
from console.decisions.models import ActionRequest
from console.ingest.models import MessageKey
from console.ingest.services import messages_ingest
from console.queues.models import Queue
from tests.browse.conftest import Index, api, login
from tests.decisions.desk import make_desk

JSON = "application/json"
DEATH = json.dumps([{"queue": "orders", "reason": "rejected", "count": 1, "exchange": ""}])
PRODUCER = {"x-trace": "abc", "x-tenant": "shop", "x-death": DEATH, "antidote-source": "forged"}
OWN = {"antidote-source": "orders-dlq", "amqp-drained-from": "orders-dlq"}
# What ingest stores: the producer's name of ours set aside, then the source's own records.
STORED = {
    "x-trace": "abc",
    "x-tenant": "shop",
    "x-death": DEATH,
    "x-foreign-antidote-source": "forged",
    **OWN,
}


def _drained(message_id="m-1", queue="orders"):
    """A JSON message a RabbitMQ source drained, as ingest stores it, quarantined and indexed."""
    result = messages_ingest(
        records=[
            {
                "id": message_id,
                "queue": queue,
                "body": '{"order": 1}',
                "content_type": JSON,
                "headers": PRODUCER,
                "own_headers": OWN,
            }
        ],
        source="rabbitmq:orders-dlq",
        from_source=True,
    )
    assert not result.errors, result.errors
    key = MessageKey.objects.select_related("commit").get(message_id=message_id)
    Index().row(message_id, queue=queue, body_path=key.commit.path, content_type=JSON)
    return message_id


@pytest.fixture
def drained(db, lake_root):
    Queue.objects.create(
        name="orders", handler="workers.demo.handlers.noop", locked_headers=["X-Tenant"]
    )
    Queue.objects.create(
        name="payments", handler="workers.demo.handlers.noop", locked_headers=["x-signature"]
    )
    return _drained()


def _new(**params):
    return reverse("request-new") + "?" + urlencode(params)


def _post(personas, message_id, headers, route="form", **extra):
    """Ask for a reprocess of the message with `headers` (a dict), through the form or the API."""
    if route == "form":
        data = {
            "action": "reprocess",
            "edited_headers": json.dumps(headers),
            "comment": "the trace was lost",
            **extra,
        }
        return login(personas["operator"]).post(_new(scope="message", id=message_id), data)
    return api(personas["operator"]).post(
        "/api/v1/requests",
        {
            "action": "reprocess",
            "scope": {"kind": "message", "id": message_id},
            "edited_headers": headers,
            "comment": "the trace was lost",
            **extra,
        },
        format="json",
    )


def _refusal(response, route):
    if route == "form":
        return " ".join(response.context["form"].non_field_errors())
    return response.json()["detail"]


def test_the_form_offers_every_header_but_those_the_product_reads_and_those_the_queue_locks(
    drained, personas
):
    page = login(personas["operator"]).get(_new(scope="message", id=drained))

    form = page.context["form"]
    editable = {"x-trace": "abc", "x-foreign-antidote-source": "forged"}
    assert form["edited_headers"].value() == json.dumps(editable, indent=2)
    kept = {name: why for name, _, why in page.context["headers_kept"]}
    assert kept == {
        "x-tenant": "locked by its queue",
        "x-death": "the broker's record of where the message died, which a redrive follows",
        "antidote-source": "the product's own (where the message came from, as its source "
        "recorded it)",
        "amqp-drained-from": "the product's own (where the message came from, as its source "
        "recorded it)",
    }
    assert 'id="headers-kept"' in page.content.decode()


def test_an_edit_of_the_headers_is_asked_for_with_the_rest_kept_and_a_second_person_approves(
    drained, personas
):
    response = _post(personas, drained, {"x-trace": "SHOP-245", "x-new": "1"})

    assert response.status_code == 302
    request = ActionRequest.objects.get()
    assert json.loads(request.edited_headers) == {
        "x-tenant": "shop",
        "x-death": DEATH,
        **OWN,
        "x-trace": "SHOP-245",
        "x-new": "1",
    }
    assert request.header_changes == [
        ["removed", "x-foreign-antidote-source", "forged", None],
        ["added", "x-new", None, "1"],
        ["changed", "x-trace", "abc", "SHOP-245"],
    ]
    assert request.edited_body is None
    assert (request.status, request.approval_reason) == (
        "pending",
        "It edits a message's headers: a second person must approve it.",
    )
    created = AuditEntry.objects.get(action="request.created", target_id=str(request.id))
    assert created.details["headers_changed"] == ["x-foreign-antidote-source", "x-new", "x-trace"]
    page = login(personas["approver"]).get(reverse("request-detail", args=[request.id]))
    html = page.content.decode()
    assert 'id="header-changes-request"' in html and "SHOP-245" in html
    # Who may not read messages sees the request, not the message's headers.
    data = api(personas["auditor"]).get(f"/api/v1/requests/{request.id}").json()
    assert (data["edited_headers"], data["header_changes"]) == (None, None)
    data = api(personas["viewer"]).get(f"/api/v1/requests/{request.id}").json()
    assert data["edited_headers"]["x-trace"] == "SHOP-245"


def test_headers_left_as_prefilled_are_no_edit(drained, personas):
    prefill = json.dumps({"x-trace": "abc", "x-foreign-antidote-source": "forged"}, indent=2)

    response = login(personas["operator"]).post(
        _new(scope="message", id=drained),
        {
            "action": "reprocess",
            "edited_headers": prefill.replace("\n", "\r\n"),
            "comment": "as it is",
        },
    )

    assert response.status_code == 302
    assert ActionRequest.objects.get().edited_headers is None


def test_the_api_takes_the_kept_headers_back_unchanged(drained, personas):
    response = _post(personas, drained, {**STORED, "x-trace": "SHOP-245"}, route="api")

    assert response.status_code == 201, response.json()
    assert response.json()["header_changes"] == [["changed", "x-trace", "abc", "SHOP-245"]]


REFUSED = [
    ({"x-tenant": "other"}, {}, "'x-tenant' is locked by its queue"),
    ({"X-TENANT": "other"}, {}, "'X-TENANT' is locked by its queue"),
    (
        {"x-signature": "forged"},
        {"target_queue": "payments"},
        "'x-signature' is locked by its queue",
    ),
    ({"amqp-drained-from": "payments-dlq"}, {}, "'amqp-drained-from' is the product's own"),
    ({"Antidote-Redrive-Url": "http://attacker.test/"}, {}, "is the product's own"),
    ({"nats-subject": "payments.in"}, {}, "'nats-subject' is the product's own"),
    ({"redis-stream": "payments"}, {}, "'redis-stream' is the product's own"),
    (
        {"x-death": json.dumps([{"queue": "payments", "reason": "rejected", "exchange": ""}])},
        {},
        "'x-death' is the broker's record of where the message died",
    ),
    ({"x-first-death-queue": "payments"}, {}, "is the broker's record"),
]


@pytest.mark.parametrize("route", ["form", "api"])
@pytest.mark.parametrize(
    ("headers", "extra", "said"),
    REFUSED,
    ids=[
        "locked",
        "locked-any-case",
        "locked-by-the-target-queue",
        "source-record",
        "own-namespace",
        "nats-subject",
        "redis-stream",
        "x-death",
        "rabbitmq-summary",
    ],
)
def test_an_edit_that_would_steer_the_message_or_touch_a_locked_header_is_refused(
    drained, personas, route, headers, extra, said
):
    response = _post(personas, drained, {"x-trace": "abc", **headers}, route=route, **extra)

    assert response.status_code == 400
    assert said in _refusal(response, route)
    assert "an edit keeps it as it is" in _refusal(response, route)
    assert not ActionRequest.objects.exists()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"x-trace": }', "The headers are not valid JSON: Expecting value at line 1, column 13."),
        ('["x-trace"]', "The headers are a JSON object of names to text values"),
        ('{"x-count": 3}', "The headers are a JSON object of names to text values"),
    ],
    ids=["broken", "list", "number"],
)
def test_headers_that_are_not_an_object_of_text_are_refused_beside_the_field(
    drained, personas, text, said
):
    response = login(personas["operator"]).post(
        _new(scope="message", id=drained),
        {"action": "reprocess", "edited_headers": text, "comment": "x"},
    )

    assert response.status_code == 400
    assert said in " ".join(response.context["form"].errors["edited_headers"])


def test_edited_headers_are_for_one_message(drained, personas):
    _drained("m-2")

    response = api(personas["operator"]).post(
        "/api/v1/requests",
        {
            "action": "reprocess",
            "scope": {"kind": "selection", "ids": ["m-1", "m-2"]},
            "edited_headers": {"x-trace": "t"},
            "comment": "x",
        },
        format="json",
    )

    assert response.status_code == 400
    assert "for a request on exactly one message" in response.json()["detail"]


# --- Carried out ---------------------------------------------------------------------------------


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


def _attempts(folder, message_id):
    lines = (Path(folder) / message_id).read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.spark
@pytest.mark.slow
def test_the_new_version_carries_the_edited_headers_to_the_handler_and_its_lineage_says_so(
    desk, personas, tmp_path
):
    desk.queue(
        "orders",
        handler="tests.handlers_for_tests.headers_recorded_then_failed",
        max_failed_deliveries=1,
        locked_headers=["x-tenant"],
    )
    headers = {"record-to": str(tmp_path), "x-trace": "abc", "x-tenant": "shop"}
    (message_id,) = desk.quarantine("orders", ['{"order": 1}'], headers=headers)
    edited = {"record-to": str(tmp_path), "x-trace": "SHOP-245", "x-new": "1"}
    request = desk.request(
        {"kind": "message", "id": message_id},
        edited_body=b'{"order": 1, "currency": "EUR"}',
        edited_headers=edited,
    )
    assert request.approval_reason.startswith("It edits a message's body and headers")

    assert desk.execute(request).status == "done"
    desk.deliver(at=desk.later(minutes=1))
    desk.refresh()

    handed = _attempts(tmp_path, message_id)[-1]
    assert handed["body"] == '{"order": 1, "currency": "EUR"}'
    assert handed["headers"] == {**edited, "x-tenant": "shop"}
    assert handed["redrive_target"] is None
    versions = desk.lineage(message_id, with_bodies=False)
    assert [v.version for v in versions] == [1, 2]
    assert versions[1].header_changes == [
        ("added", "x-new", None, "1"),
        ("changed", "x-trace", "abc", "SHOP-245"),
    ]
    page = login(personas["viewer"]).get(reverse("message-detail", args=[message_id]))
    assert 'id="header-changes-2"' in page.content.decode()


@pytest.mark.spark
@pytest.mark.slow
def test_a_patched_body_that_names_a_destination_is_data_and_steers_nothing(
    desk, personas, tmp_path
):
    desk.queue(
        "orders",
        handler="tests.handlers_for_tests.headers_recorded_then_failed",
        max_failed_deliveries=1,
    )
    headers = {"record-to": str(tmp_path)}
    ids = desk.quarantine("orders", ['{"order": 1}', '{"order": 2}'], headers=headers)
    steer = [
        {"op": "add", "path": "/redrive_target", "value": {"url": "http://attacker.test/"}},
        {"op": "add", "path": "/antidote-source", "value": "payments-dlq"},
    ]
    request = desk.request({"kind": "selection", "ids": ids}, patch=steer)

    assert desk.execute(request).status == "done"
    desk.deliver(at=desk.later(minutes=1))

    for message_id in ids:
        handed = _attempts(tmp_path, message_id)[-1]
        assert json.loads(handed["body"])["redrive_target"] == {"url": "http://attacker.test/"}
        assert handed["headers"] == headers  # a body's fields never become headers
        assert handed["redrive_target"] is None  # only a request's own target goes there
    assert Queue.objects.filter(name="orders").count() == 1
