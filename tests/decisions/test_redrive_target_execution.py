"""A request's redrive target reaches the sinks (issue 32, item 5): each message a reprocess with
a target puts back carries the target, as its `redrive_target` (never a header, R18), to its
queue's handler; a later reprocess without a target hands it none. Real ingest, delivery runs
and execution on the real Spark session."""

import json

import pytest
from django.urls import reverse

from console.decisions.models import ActionRequest
from console.queues.models import Queue
from tests.browse.conftest import login
from tests.decisions.desk import make_desk

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TARGET = {"exchange": "orders", "routing_key": "orders.retry"}


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


def _attempts(folder, message_id):
    return [json.loads(line) for line in (folder / message_id).read_text().splitlines()]


def test_each_message_a_reprocess_with_a_target_puts_back_carries_it_and_a_later_one_does_not(
    desk, tmp_path, personas
):
    desk.queue(
        "orders", handler="tests.handlers_for_tests.always_transient", max_failed_deliveries=1
    )
    headers = {"record-to": str(tmp_path), "x-trace": "t-1"}
    ids = desk.quarantine("orders", ["one", "two"], headers=headers)
    Queue.objects.filter(name="orders").update(
        handler="tests.handlers_for_tests.headers_recorded_then_failed"
    )

    elsewhere = desk.request({"kind": "selection", "ids": ids}, redrive_target=TARGET)
    assert elsewhere.needs_approval
    elsewhere = desk.execute(elsewhere)
    assert (elsewhere.status, elsewhere.done) == (ActionRequest.DONE, 2)
    desk.deliver()
    desk.refresh()

    for message_id, body in zip(ids, ["one", "two"], strict=True):
        [first] = _attempts(tmp_path, message_id)
        assert first["body"] == body
        assert first["headers"] == headers
        assert first["redrive_target"] == json.dumps(TARGET, sort_keys=True)
        assert desk.index_state(message_id) == "NDLV"
    # The version that carries the target is no edit: the message page shows no lineage, and
    # its body as it was.
    page = login(personas["operator"]).get(reverse("message-detail", args=[ids[0]]))
    assert 'id="body-lineage"' not in page.content.decode()
    assert "one" in page.content.decode()

    home = desk.request({"kind": "selection", "ids": ids})
    desk.execute(home)
    desk.deliver()

    for message_id, body in zip(ids, ["one", "two"], strict=True):
        second = _attempts(tmp_path, message_id)[1]
        assert second == {"body": body, "headers": headers, "redrive_target": None}


def test_an_edited_body_with_a_target_carries_both(desk, tmp_path):
    desk.queue(
        "orders", handler="tests.handlers_for_tests.always_transient", max_failed_deliveries=1
    )
    [message_id] = desk.quarantine("orders", ["old"], headers={"record-to": str(tmp_path)})
    Queue.objects.filter(name="orders").update(
        handler="tests.handlers_for_tests.headers_recorded_then_failed"
    )

    request = desk.request(
        {"kind": "message", "id": message_id},
        edited_body=b"new",
        redrive_target={"url": "https://orders.example/hooks"},
    )
    desk.execute(request)
    desk.deliver()

    [attempt] = _attempts(tmp_path, message_id)
    assert attempt["body"] == "new"
    assert attempt["redrive_target"] == '{"url": "https://orders.example/hooks"}'
