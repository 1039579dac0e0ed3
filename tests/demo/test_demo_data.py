"""The demo data set and the demo queue file."""

import base64
import collections
import json

import pytest

from console.queues.management.commands.load_queues import read_queue_file
from console.queues.models import Queue
from console.queues.services import queues_load
from workers.demo import handlers as H
from workers.demo.data import QUEUES_FILE, demo_file_write, demo_message_ids, demo_messages
from workers.engine.handlers import Message, PermanentFailure, load_handler


@pytest.fixture(scope="module")
def demo_set():
    return list(demo_messages())


def _outcome(message):
    handler = load_handler(f"workers.demo.handlers.{message['queue']}")
    body = message["body"]
    if b"CRASH-0001" in body:
        return "crash"  # the handler would end this process: see test_demo_handlers
    try:
        handler(
            Message(
                id=message["message_id"],
                queue=message["queue"],
                body=body,
                content_type=message["content_type"],
            )
        )
    except PermanentFailure:
        return "permanent"
    except Exception:
        return "transient"
    return "success"


def test_it_holds_a_few_thousand_messages_with_unique_ids(demo_set):
    ids = [m["message_id"] for m in demo_set]

    assert 2500 <= len(ids) <= 5000
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("demo-") for i in ids)


def test_it_is_the_same_set_every_time(demo_set):
    assert list(demo_messages()) == demo_set
    assert demo_message_ids() == [m["message_id"] for m in demo_set]


def test_another_seed_gives_other_bodies_under_the_same_ids(demo_set):
    other = list(demo_messages(seed=1))

    assert other[0]["message_id"] == demo_set[0]["message_id"]
    assert other[0]["body"] != demo_set[0]["body"]


def test_it_fills_every_demo_queue_but_the_backout_queue(demo_set):
    counts = collections.Counter(m["queue"] for m in demo_set)

    assert set(counts) == {"orders", "shipping", "invoices", "payments"}
    assert min(counts.values()) >= 200


def test_messages_carry_conversations_senders_and_headers(demo_set):
    by_conversation = collections.defaultdict(set)
    for message in demo_set:
        assert message["sender"]
        assert message["headers"]["trace_id"]
        by_conversation[message["conversation_id"]].add(message["queue"])

    assert any(len(queues) >= 3 for queues in by_conversation.values())


def test_it_has_json_xml_and_binary_bodies(demo_set):
    types = collections.Counter(m["content_type"] for m in demo_set)

    assert set(types) == {
        "application/json",
        "application/xml",
        "application/pdf",
        "application/octet-stream",
    }


def test_the_pathological_order_comes_twice_with_the_same_body_under_two_ids(demo_set):
    crashing = [m for m in demo_set if b"CRASH-0001" in m["body"]]

    assert len(crashing) == 2
    assert crashing[0]["body"] == crashing[1]["body"]
    assert crashing[0]["message_id"] != crashing[1]["message_id"]


def test_each_queue_shows_the_outcomes_its_rules_need(demo_set):
    outcomes = collections.defaultdict(collections.Counter)
    for message in demo_set:
        outcomes[message["queue"]][_outcome(message)] += 1

    assert set(outcomes["orders"]) == {"success", "permanent", "transient", "crash"}
    assert set(outcomes["shipping"]) == {"success", "permanent", "transient"}
    assert set(outcomes["payments"]) == {"success", "permanent"}
    assert set(outcomes["invoices"]) == {"transient"}
    # Most of the shop works: the failures are the exception.
    assert outcomes["orders"]["success"] > 0.85 * sum(outcomes["orders"].values())


def test_the_file_has_one_message_per_line_with_binary_bodies_in_base64(tmp_path, demo_set):
    path = tmp_path / "demo.jsonl"

    counts = demo_file_write(path)

    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == sum(counts.values()) == len(demo_set)
    fields = {"id", "queue", "body", "body_encoding", "content_type", "headers"}
    fields |= {"conversation_id", "sender"}
    for line, message in zip(lines, demo_set, strict=True):
        assert set(line) <= fields
        assert line["id"] == message["message_id"]
        if line.get("body_encoding") == "base64":
            assert base64.b64decode(line["body"]) == message["body"]
        else:
            assert line["body"].encode() == message["body"]
    assert sum(line.get("body_encoding") == "base64" for line in lines) > 20
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.django_db
def test_the_demo_queue_file_loads_with_the_documented_policies():
    results = queues_load(data=read_queue_file(QUEUES_FILE))

    assert {r.name for r in results} == {
        "orders",
        "shipping",
        "shipping.exceptions",
        "invoices",
        "payments",
    }
    q = {queue.name: queue for queue in Queue.objects.all()}
    assert (q["orders"].max_failed_deliveries, q["orders"].exception_destination) == (
        5,
        "quarantine",
    )
    assert q["orders"].poison_match == "id_or_body"
    assert (q["shipping"].backoff_every, q["shipping"].backoff_delays) == (5, [300, 600])
    assert q["shipping"].periodic_interval == 3600
    assert q["shipping"].exception_destination == "queue:shipping.exceptions"
    assert q["invoices"].disable_after == 5
    assert q["payments"].on_permanent == "return_to_sender"
    assert q["shipping.exceptions"].handler == "workers.demo.handlers.shipping_exceptions"


def test_every_handler_the_demo_queue_file_names_exists():
    for entry in read_queue_file(QUEUES_FILE)["queues"]:
        assert load_handler(entry["handler"]).__module__ == H.__name__
