"""R9, R13: reprocessing takes a message off the shared poison list by id and by body. Two
quarantined messages share a body on a queue that matches by body; once one is reprocessed, its
handler is called (fixed meanwhile), while the other stays quarantined and listed by id. An
outside application's copy of the list, and a running delivery run's feed, both see it."""

import hashlib

import pytest

from console.delivery.models import PoisonEntry
from console.delivery.poison import poison_feed_dir, poison_snapshot
from console.queues.models import Queue
from tests.decisions.desk import make_desk
from tests.poison_client import poison_list
from workers.engine import states as S
from workers.engine.poison_feed import PoisonFeed

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BODY = b"permanent"
SHA = hashlib.sha256(BODY).hexdigest()


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


def test_a_reprocessed_message_reaches_its_fixed_handler_though_another_shares_its_body(
    desk, live_server, personas, tmp_path
):
    desk.queue("orders.strict", poison_match="id_or_body")
    headers = {"record-to": str(tmp_path)}
    desk.quarantine("orders.strict", {"first": "permanent"}, headers=headers)
    desk.quarantine("orders.strict", {"copy": "permanent"}, headers=headers)
    assert desk.state("copy")["reason"].startswith("on the poison list: same body as")
    assert {e.message_id: e.body_sha256 for e in PoisonEntry.objects.all()} == {
        "first": SHA,
        "copy": SHA,
    }
    poison = poison_list(live_server, personas["application"])
    poison.load()
    assert poison.is_poisoned(body=BODY)
    snapshot = poison_snapshot()
    feed = PoisonFeed(poison_feed_dir(), snapshot.cursor, snapshot.ids, snapshot.hashes)
    Queue.objects.filter(name="orders.strict").update(
        handler="tests.handlers_for_tests.calls_recorded"
    )

    request = desk.execute(desk.request({"kind": "message", "id": "first"}))

    assert request.status == "done"
    # The outside application's copy.
    assert poison.refresh() == 2  # removed "first", body cleared on "copy"
    assert not poison.is_poisoned("first", body=BODY)
    assert not poison.is_poisoned(body_sha256=SHA)
    assert poison.is_poisoned("copy")
    # A running delivery run's feed.
    feed.refresh()
    assert feed.reason("first", SHA, by_body=True) is None
    assert feed.reason("other", SHA, by_body=True) is None
    assert feed.reason("copy", SHA, by_body=True) == snapshot_reason(snapshot, "copy")

    desk.deliver()

    assert desk.state("first")["state"] == S.DLVD
    assert (tmp_path / "first").read_text() == "called\n"
    assert desk.state("copy")["state"] == S.NDLV
    assert not (tmp_path / "copy").exists()
    entry = PoisonEntry.objects.get(message_id="copy")
    assert entry.body_sha256 == ""
    assert not PoisonEntry.objects.filter(message_id="first").exists()


def snapshot_reason(snapshot, message_id):
    return dict(snapshot.ids)[message_id]
