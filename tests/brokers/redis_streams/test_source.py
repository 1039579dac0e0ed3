"""The Redis Streams source against the shared Redis: which pending entries it claims, what it
makes of them, acknowledging and deleting, parking, and a link killed before it acknowledged."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.brokers.records import as_stored
from tests.brokers.redis_streams.conftest import URL_ENV, link_of, source_config
from workers.brokers.base import SourceDown
from workers.brokers.dead_letters import dead_letter_of
from workers.brokers.redis_streams.record import EntryMalformed
from workers.brokers.redis_streams.source import CONNECTOR

pytestmark = pytest.mark.services

# Entries in these tests wait this long without a delivery before they count as idle.
IDLE_MS = 50


def idle():
    time.sleep(IDLE_MS * 2 / 1000)


def drained(link, *, timeout=2.0):
    """Everything the link hands out until it has nothing more, as {entry id: delivery}."""
    found = {}
    while True:
        batch = link.fetch(limit=100, timeout=timeout)
        if not batch:
            return found
        for delivery in batch:
            assert delivery.raw.entry_id not in found, "handed out twice"
            found[delivery.raw.entry_id] = delivery
        timeout = 0.2


def test_it_claims_an_entry_read_past_the_threshold_with_its_origin_and_reason(streams):
    stream, group = streams.key("orders"), "billing"
    entry_id = streams.poisoned(
        stream, group, {"body": '{"order": 7}', "tenant": "acme"}, reads=3, consumer="worker-1"
    )
    idle()

    with link_of(stream, group=group, min_deliveries=3, min_idle_ms=IDLE_MS) as link:
        (delivery,) = link.fetch(limit=10, timeout=2)
        record = as_stored(link.record(delivery))

    assert record["id"] == f"redis-{stream}-{entry_id}"
    assert record["queue"] == "orders-dead"
    assert record["body"] == b'{"order": 7}'
    headers = record["headers"]
    assert headers["tenant"] == "acme"
    assert headers["redis-stream"] == stream
    assert headers["redis-entry-id"] == entry_id
    assert headers["redis-group"] == group
    assert headers["redis-consumer"] == "worker-1"
    assert headers["redis-deliveries"] == "3"
    assert int(headers["redis-idle-ms"]) >= IDLE_MS
    assert headers["antidote-source"] == "orders-dlq"
    dead = dead_letter_of(headers)
    assert dead.reason == (
        f"delivered 3 times to consumer group '{group}' of stream '{stream}' without an "
        "acknowledgement; last consumer 'worker-1'"
    )
    assert dead.exception_type == "redis.unacknowledged"
    assert dead.count == 3
    # Antidote holds it now, and the claim (RETRYCOUNT) left the group's own count as it was.
    assert streams.pending(stream, group) == {entry_id: ("antidote", 3)}


def test_the_claim_leaves_each_entrys_delivery_count_as_the_group_made_it(streams):
    stream, group = streams.key("orders"), "billing"
    counts = {streams.poisoned(stream, group, {"body": f"{n}"}, reads=n): n for n in (3, 5, 3, 4)}
    idle()

    with link_of(stream, group=group, min_deliveries=3, min_idle_ms=IDLE_MS) as link:
        found = drained(link)

    assert list(found) == list(counts)  # in the stream's order
    assert {i: d.raw.deliveries for i, d in found.items()} == counts
    assert streams.pending(stream, group) == {i: ("antidote", n) for i, n in counts.items()}


def test_it_leaves_entries_under_the_threshold_or_not_idle_long_enough_alone(streams):
    stream, group = streams.key("orders"), "billing"
    twice = streams.poisoned(stream, group, {"body": "twice"}, reads=2)
    idle()
    fresh = streams.poisoned(stream, group, {"body": "fresh"}, reads=5)

    with link_of(stream, group=group, min_deliveries=3, min_idle_ms=5_000) as link:
        assert link.fetch(limit=10, timeout=0.3) == []
    with link_of(stream, group=group, min_deliveries=3, min_idle_ms=IDLE_MS) as link:
        # `fresh` becomes idle enough during this wait; `twice` never qualifies.
        found = drained(link, timeout=1)

    assert list(found) == [fresh]
    assert streams.pending(stream, group) == {twice: ("worker-1", 2), fresh: ("antidote", 5)}


def test_ack_acknowledges_and_the_delete_option_removes_the_entry(streams):
    kept_stream, deleted_stream, group = streams.key("kept"), streams.key("deleted"), "g"
    kept = streams.poisoned(kept_stream, group, {"body": "a"}, reads=1)
    deleted = streams.poisoned(deleted_stream, group, {"body": "b"}, reads=1)
    idle()

    options = {"group": group, "min_deliveries": 1, "min_idle_ms": IDLE_MS}
    with link_of(kept_stream, **options) as link:
        link.ack(link.fetch(limit=10, timeout=2))
    with link_of(deleted_stream, delete=True, **options) as link:
        link.ack(link.fetch(limit=10, timeout=2))

    assert streams.pending(kept_stream, group) == {}
    assert streams.pending(deleted_stream, group) == {}
    assert [i.decode() for i, _ in streams.client.xrange(kept_stream)] == [kept]
    assert streams.client.xrange(deleted_stream) == []
    assert deleted


def test_it_drains_every_group_named_and_a_long_pending_list_in_slices(streams, monkeypatch):
    monkeypatch.setattr("workers.brokers.redis_streams.source.SCAN_PAGE", 3)
    monkeypatch.setattr("workers.brokers.redis_streams.source.SCAN_BUDGET", 3)
    stream = streams.key("orders")
    healthy = [streams.poisoned(stream, "a", {"body": f"ok {i}"}, reads=1) for i in range(7)]
    poison_a = streams.poisoned(stream, "a", {"body": "poison a"}, reads=4)
    poison_b = streams.poisoned(stream, "b", {"body": "poison b"}, reads=4, consumer="w-b")
    idle()

    with link_of(stream, groups=["a", "b"], min_deliveries=4, min_idle_ms=IDLE_MS) as link:
        assert link.lag() == 2
        found = drained(link)
        assert {d.token for d in found.values()} == {("a", poison_a), ("b", poison_b)}
        link.ack(list(found.values()))
        assert link.lag() == 2  # asked of Redis every few seconds, not at each call
        link.lag_asked = None
        assert link.lag() == 0

    assert set(streams.pending(stream, "a")) == set(healthy)


def test_a_listing_that_began_mid_list_goes_round_once_before_it_waits(streams):
    stream, group = streams.key("orders"), "billing"
    early = streams.poisoned(stream, group, {"body": "early"}, reads=1)
    later = streams.poisoned(stream, group, {"body": "later"}, reads=3)
    idle()

    with link_of(stream, group=group, min_deliveries=3, min_idle_ms=IDLE_MS) as link:
        (first,) = link.fetch(limit=1, timeout=0)
        assert first.raw.entry_id == later
        # Left at the end of the list; meanwhile the group reads `early` twice more.
        for _ in range(2):
            streams.client.xclaim(stream, group, "worker-1", 0, [early])
        idle()

        # One look, no waiting (timeout 0): found by going round, not left for the next poll.
        (second,) = link.fetch(limit=1, timeout=0)

    assert second.raw.entry_id == early


def test_a_link_killed_after_claiming_loses_nothing_the_next_link_takes_the_entries_again(
    streams, tmp_path
):
    stream, group = streams.key("orders"), "billing"
    ids = [streams.poisoned(stream, group, {"body": f"order {i}"}, reads=3) for i in range(5)]
    idle()
    options = {"group": group, "min_deliveries": 3, "min_idle_ms": IDLE_MS}
    claimed = tmp_path / "claimed.json"
    script = f"""
import json, os, signal
from tests.brokers.redis_streams.conftest import source_config
from workers.brokers.redis_streams.source import CONNECTOR
link = CONNECTOR.open(source_config({stream!r}, **{options!r}))
deliveries = link.fetch(limit=3, timeout=5)
with open({str(claimed)!r}, "w") as out:
    json.dump([d.raw.entry_id for d in deliveries], out)
os.kill(os.getpid(), signal.SIGKILL)
"""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])}
    child = subprocess.run([sys.executable, "-c", script], env=env, timeout=60, check=False)
    assert child.returncode == -signal.SIGKILL
    first = json.loads(claimed.read_text())
    assert first == ids[:3]
    assert {i: streams.pending(stream, group)[i] for i in first} == dict.fromkeys(
        first, ("antidote", 3)
    )

    with link_of(stream, **options) as link:
        found = drained(link)
        # Antidote's own unacknowledged entries come first, then the claims.
        assert list(found) == ids
        recovered = as_stored(link.record(found[first[0]]))
        assert recovered["id"] == f"redis-{stream}-{first[0]}"
        assert recovered["headers"]["redis-deliveries"] == "3"
        assert dead_letter_of(recovered["headers"]).reason.endswith(
            "its last consumer is not known (Antidote claimed it before a restart)"
        )
        link.ack(list(found.values()))

    assert streams.pending(stream, group) == {}


def test_an_entry_without_a_body_field_becomes_the_json_of_its_fields(streams):
    stream, group = streams.key("orders"), "g"
    streams.poisoned(stream, group, {"order_id": "7", "amount": "12.50"}, reads=1)
    idle()

    with link_of(stream, group=group, min_deliveries=1, min_idle_ms=IDLE_MS) as link:
        (delivery,) = link.fetch(limit=10, timeout=2)
        record = as_stored(link.record(delivery))

    assert json.loads(record["body"]) == {"order_id": "7", "amount": "12.50"}
    assert record["content_type"] == "application/json"
    assert "redis-fields" not in record["headers"]


def test_a_malformed_entry_is_parked_with_its_reason_then_acknowledged(streams):
    stream, group = streams.key("orders"), "g"
    entry_id = streams.poisoned(stream, group, {"blob": b"\xff\xfe", "kind": "x"}, reads=1)
    idle()

    with link_of(stream, group=group, min_deliveries=1, min_idle_ms=IDLE_MS) as link:
        (delivery,) = link.fetch(limit=10, timeout=2)
        with pytest.raises(EntryMalformed) as caught:
            as_stored(link.record(delivery))
        reason = f"could not be read: EntryMalformed: {caught.value}"
        link.park(delivery, reason)
        link.ack([delivery])

    assert str(caught.value) == (
        "it has no 'body' field, so its body would be the JSON of its fields, and field "
        "'blob' is not UTF-8 text"
    )
    ((_, fields),) = streams.client.xrange(stream + ":antidote-refused")
    assert fields == {
        b"blob": b"\xff\xfe",
        b"kind": b"x",
        b"antidote-refused-reason": reason.encode(),
        b"antidote-refused-entry-id": entry_id.encode(),
        b"antidote-refused-group": b"g",
    }
    assert streams.pending(stream, group) == {}
    assert CONNECTOR.parking_name(source_config(stream)) == stream + ":antidote-refused"


def test_an_entry_deleted_while_antidote_held_it_is_parked_with_what_is_left(streams):
    stream, group = streams.key("orders"), "g"
    entry_id = streams.poisoned(stream, group, {"body": "gone"}, reads=1)
    idle()
    options = {"group": group, "min_deliveries": 1, "min_idle_ms": IDLE_MS}
    with link_of(stream, **options) as link:
        assert len(link.fetch(limit=10, timeout=2)) == 1
    streams.client.xdel(stream, entry_id)  # by someone else, before Antidote acknowledged

    with link_of(stream, **options) as link:
        (delivery,) = link.fetch(limit=10, timeout=2)
        with pytest.raises(EntryMalformed, match="was deleted from the stream"):
            as_stored(link.record(delivery))
        link.park(delivery, "deleted")
        link.ack([delivery])

    ((_, fields),) = streams.client.xrange(stream + ":antidote-refused")
    assert fields[b"antidote-refused-entry-id"] == entry_id.encode()
    assert streams.pending(stream, group) == {}


def test_open_says_when_the_stream_or_a_group_is_missing(streams):
    stream = streams.key("orders")
    with pytest.raises(SourceDown, match="does not exist"):
        CONNECTOR.open(source_config(stream, group="g"))
    streams.client.xgroup_create(stream, "g", mkstream=True)
    with pytest.raises(SourceDown, match="has no consumer group 'other'"):
        CONNECTOR.open(source_config(stream, groups=["g", "other"]))
    with pytest.raises(SourceDown, match=URL_ENV):
        CONNECTOR.open(source_config(stream, url="http://127.0.0.1/", group="g"))
    bad_port = source_config(stream, url="redis://:sekrit@127.0.0.1:port/0", group="g")
    with pytest.raises(SourceDown) as caught:
        CONNECTOR.where(bad_port)
    assert str(caught.value) == f"the URL in {URL_ENV} cannot be read"


def test_why_names_no_password_and_says_what_happened(streams):
    import redis

    config = source_config("s", url="redis://:sekrit@127.0.0.1:1/0", group="g")
    assert CONNECTOR.where(config) == "Redis at 127.0.0.1:1/0, stream 's'"
    with pytest.raises(redis.ConnectionError) as caught:
        CONNECTOR.open(config)
    why = CONNECTOR.why(caught.value, config)
    assert why.startswith("cannot reach Redis:")
    assert "sekrit" not in why
    nogroup = redis.ResponseError("NOGROUP No such key 's' or consumer group 'g'")
    assert CONNECTOR.why(nogroup, config).startswith("a consumer group of stream 's'")


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({}, "name the consumer group(s) to drain"),
        ({"group": "a", "groups": ["b"]}, "name the consumer group(s) to drain"),
        ({"groups": []}, "groups must be a list"),
        ({"groups": ["a", "a"]}, "groups must be a list"),
        ({"group": "a", "min_deliveries": 0}, "min_deliveries must be"),
        ({"group": "a", "min_deliveries": True}, "min_deliveries must be"),
        ({"group": "a", "min_idle_ms": -1}, "min_idle_ms must be"),
        ({"group": "a", "delete": "yes"}, "delete must be true or false"),
        ({"group": "a", "body_field": ""}, "body_field must name a field"),
        ({"group": "a", "consumer": 3}, "consumer must be a name"),
        ({"group": "a", "stream": "x"}, "unknown option(s) stream"),
    ],
)
def test_options_errors_says_what_is_wrong(options, error):
    errors = CONNECTOR.options_errors(options)
    assert len(errors) == 1
    assert errors[0].startswith(error)


def test_good_options_have_no_errors():
    assert CONNECTOR.options_errors({"group": "a"}) == []
    assert (
        CONNECTOR.options_errors(
            {
                "groups": ["a", "b"],
                "consumer": "antidote-2",
                "min_deliveries": 5,
                "min_idle_ms": 0,
                "delete": True,
                "body_field": "payload",
            }
        )
        == []
    )
