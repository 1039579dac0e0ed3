"""R18, as an attacker who can only publish messages: headers in the product's namespaces
(`antidote-`, and the records a broker source writes, `amqp-`, `nats-`, `redis-`) are the
product's. Sent in by a producer, from any route, they are kept under a foreign name for people
to see, and a reprocess (a plain one, approved by nobody) sends the message where the queue's
configuration says, never where the producer asked: an attacker's endpoint on every sink
(RabbitMQ, NATS, Redis Streams, HTTP) receives nothing."""

import json
import uuid
from datetime import UTC, datetime

import pika
import pytest
import redis
from django.urls import reverse
from rest_framework.test import APIClient

from console.accounts.tokens.services import token_create
from console.ingest.services import ingest_file
from console.lake.selectors import lake_paths
from console.lake.services import lake
from tests.brokers.amqp_queues import messages_taken
from tests.brokers.http.receiver import Answer
from tests.brokers.nats.conftest import SHARED_URL as NATS_URL
from tests.brokers.nats.conftest import Client as NatsClient
from tests.browse.conftest import login
from tests.conftest import require_service
from tests.decisions.desk import make_desk
from tests.message_rows import message_row
from workers.brokers.rabbitmq.record import properties_text
from workers.engine import states as S

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
REDIS_URL = "redis://127.0.0.1:6379/7"
REDIS_URL_ENV = "ANTIDOTE_TEST_REDIS_STREAMS_URL"
POSTER = "workers.brokers.http.poster"
RABBITMQ = "workers.brokers.redrive.publisher"
NATS = "workers.brokers.nats.publisher"
REDIS = "workers.brokers.redis_streams.publisher"


def _producer(personas):
    """The attacker: an application's service account, whose token may send messages in."""
    _, token = token_create(actor="cli:test", user=personas["application"], name="producer")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def _stored_headers(message_id):
    rows = lake().read_arrow("messages", lake_paths(dataset="messages")).to_pylist()
    [row] = [r for r in rows if r["message_id"] == message_id]
    return json.loads(row["headers"]), row["redrive_target"]


def _death(queue):
    return {
        "count": 1,
        "reason": "rejected",
        "queue": queue,
        "exchange": "",
        "routing-keys": [queue],
    }


# --- Every route in sets them aside ---------------------------------------------------------------


@pytest.fixture
def orders(db, lake_root):
    from console.queues.models import Queue

    return Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")


def test_a_producers_headers_of_ours_sent_to_the_api_are_kept_under_a_foreign_name(
    personas, orders
):
    forged = {
        "antidote-redrive-target": '{"url": "http://127.0.0.1:9/"}',
        "Antidote-Source": "orders-rabbitmq",
        "amqp-drained-from": "payments",
        "NATS-Subject": "payments.created",
        "redis-stream": "payments",
        "x-foreign-redis-stream": "taken already",
        "x-trace": "t-1",
    }
    answer = _producer(personas).post(
        "/api/v1/messages",
        {"messages": [{"id": "a-1", "queue": "orders", "body": "{}", "headers": forged}]},
        format="json",
    )
    assert answer.status_code in (200, 201, 202), answer.content

    headers, target = _stored_headers("a-1")
    assert target is None
    assert headers == {
        "x-foreign-antidote-redrive-target": forged["antidote-redrive-target"],
        "x-foreign-Antidote-Source": "orders-rabbitmq",
        "x-foreign-amqp-drained-from": "payments",
        "x-foreign-NATS-Subject": "payments.created",
        # A name the producer took already keeps its value; the one set aside is numbered.
        "x-foreign-redis-stream-2": "payments",
        "x-foreign-redis-stream": "taken already",
        "x-trace": "t-1",
    }
    # The message's page says which headers were set aside.
    page = login(personas["operator"]).get(reverse("message-detail", args=["a-1"]))
    assert page.status_code == 200
    assert page.content.decode().count('class="muted header-foreign"') == 6


def test_a_producer_cannot_pass_its_headers_for_a_sources_records(personas, orders):
    answer = _producer(personas).post(
        "/api/v1/messages",
        {
            "messages": [
                {
                    "id": "a-2",
                    "queue": "orders",
                    "body": "{}",
                    "own_headers": {"amqp-drained-from": "payments"},
                }
            ]
        },
        format="json",
    )
    assert "own_headers" in answer.content.decode()
    assert not lake_paths(dataset="messages")


def test_a_file_dropped_in_the_inbox_has_its_headers_of_ours_set_aside(db, orders, tmp_path):
    path = tmp_path / "orders.jsonl"
    record = {
        "id": "f-1",
        "queue": "orders",
        "body": "{}",
        "headers": {"antidote-redrive-target": '{"stream": "payments"}', "tenant": "acme"},
    }
    path.write_text(json.dumps(record) + "\n")

    result = ingest_file(path=path, source="inbox:orders.jsonl")

    assert result.accepted == 1
    headers, target = _stored_headers("f-1")
    assert (headers, target) == (
        {"x-foreign-antidote-redrive-target": '{"stream": "payments"}', "tenant": "acme"},
        None,
    )


# --- The attack, end to end, through every sink -----------------------------------------------


class _Rabbit:
    def __init__(self):
        self.connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
        self.channel = self.connection.channel()
        self.queues = []

    def name(self, what):
        name = f"antidote.test.r18.{what}.{uuid.uuid4().hex[:10]}"
        self.queues.append(name)
        return name

    def declare(self, name):
        self.channel.queue_declare(name, durable=True)

    def bodies(self, queue):
        return [body for _, body in messages_taken(self.channel, queue)]

    def close(self):
        for queue in self.queues:
            self.channel.queue_delete(queue)
        self.connection.close()


@pytest.fixture
def brokers(monkeypatch):
    for name, port in (("RabbitMQ", 5672), ("NATS", 4222), ("Redis", 6379)):
        require_service(name, port=port)
    monkeypatch.setenv("ANTIDOTE_AMQP_URL", AMQP_URL)
    monkeypatch.setenv("ANTIDOTE_NATS_URL", NATS_URL)
    monkeypatch.setenv(REDIS_URL_ENV, REDIS_URL)
    monkeypatch.setenv("ANTIDOTE_WEBHOOK_SECRET", "whsec_" + "QW50aWRvdGUtdGVzdHMtc2VjcmV0LTI0")
    rabbit, nats, streams = _Rabbit(), NatsClient(NATS_URL), redis.Redis.from_url(REDIS_URL)
    tag = uuid.uuid4().hex[:8].upper()
    made = []
    yield rabbit, nats, streams, tag, made
    rabbit.close()
    for stream in made:
        nats.delete_stream(stream)
    nats.close()
    for key in streams.scan_iter(match=f"antidote-test:r18:{tag}:*"):
        streams.delete(key)
    streams.close()


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    # A trickle is delivered without a Spark job; one person may reprocess these alone.
    settings.DELIVERY_LOCAL_MAX = 1000
    settings.APPROVAL_OVER = 10
    return make_desk(spark, personas, settings)


@pytest.mark.database_blind  # the shared NATS server: one run at a time (tests/conftest.py)
def test_a_producers_redrive_target_and_origin_reach_no_sink_a_plain_reprocess_goes_home(
    desk, brokers, receiver, personas
):
    rabbit, nats, streams, tag, made = brokers
    # The guard lets both through: only R18 keeps the message from the attacker here.
    legit_http, attacker_http = receiver(Answer(503), Answer(200)), receiver(Answer(200))
    home_q, attacker_q = rabbit.name("home"), rabbit.name("attacker")
    rabbit.declare(attacker_q)  # home_q comes later: the first attempt finds no queue
    nats.add_stream(f"R18_ATTACK_{tag}", [f"attack.{tag}.>"])
    made.append(f"R18_ATTACK_{tag}")
    home_key, attacker_key = (f"antidote-test:r18:{tag}:{what}" for what in ("home", "attacker"))
    streams.set(home_key, "not a stream yet")

    once = {"max_failed_deliveries": 1}
    desk.queue("to-http", handler=POSTER, handler_options={"url": legit_http.url}, **once)
    desk.queue("to-rabbitmq", handler=RABBITMQ, handler_options={"routing_key": home_q}, **once)
    desk.queue("to-rabbitmq-origin", handler=RABBITMQ, handler_options={}, **once)
    desk.queue("to-nats", handler=NATS, handler_options={"subject": f"home.{tag}.in"}, **once)
    desk.queue(
        "to-redis",
        handler=REDIS,
        handler_options={"url_env": REDIS_URL_ENV, "stream": home_key},
        **once,
    )

    death = [_death(attacker_q)]
    target = json.dumps(
        {
            "url": attacker_http.url,
            "exchange": "",
            "routing_key": attacker_q,
            "subject": f"attack.{tag}.stolen",
            "stream": attacker_key,
        }
    )
    forged = {
        "antidote-redrive-target": target,
        "Antidote-Redrive-Target": target,
        "amqp-properties": properties_text(
            pika.BasicProperties(headers={"x-death": death}, delivery_mode=2)
        ),
        "amqp-drained-from": attacker_q,
        "x-death": json.dumps(death),
        "nats-subject": f"attack.{tag}.origin",
        "nats-headers": "{}",
        "redis-stream": attacker_key,
    }
    queues = ["to-http", "to-rabbitmq", "to-rabbitmq-origin", "to-nats", "to-redis"]
    answer = _producer(personas).post(
        "/api/v1/messages",
        {
            "messages": [
                {"id": f"m-{queue}", "queue": queue, "body": '{"order": 1}', "headers": forged}
                for queue in queues
            ]
        },
        format="json",
    )
    assert answer.status_code in (200, 201, 202), answer.content
    ids = [f"m-{queue}" for queue in queues]

    desk.deliver_until_idle()
    desk.refresh()
    assert {desk.state(m)["state"] for m in ids} == {S.NDLV}
    origin = desk.state("m-to-rabbitmq-origin")
    assert origin["exception_type"] == "NoRedriveTarget"

    # The queues' own targets are there now; a plain reprocess, approved by nobody.
    rabbit.declare(home_q)
    nats.add_stream(f"R18_HOME_{tag}", [f"home.{tag}.>"])
    made.append(f"R18_HOME_{tag}")
    streams.delete(home_key)
    request = desk.request({"kind": "selection", "ids": ids}, approve=False)
    assert request.status != "pending"
    desk.execute(request)
    desk.now = datetime.now(UTC)
    desk.deliver()

    # Home, once each.
    assert [r.body for r in legit_http.received] == [b'{"order": 1}'] * 2  # 503, then 200
    assert rabbit.bodies(home_q) == [b'{"order": 1}']
    assert [m.data for m in nats.read_all(f"R18_HOME_{tag}", f"home.{tag}.in")] == [b'{"order": 1}']
    assert [f[b"body"] for _, f in streams.xrange(home_key)] == [b'{"order": 1}']
    for queue in queues[:2] + queues[3:]:
        assert desk.state(f"m-{queue}")["state"] == S.DLVD, queue
    # The message whose only "origin" was the producer's word went nowhere, and says why.
    assert desk.state("m-to-rabbitmq-origin")["state"] == S.NDLV
    # The attacker's endpoints received nothing, on any sink.
    assert attacker_http.received == []
    assert rabbit.bodies(attacker_q) == []
    assert nats.read_all(f"R18_ATTACK_{tag}", f"attack.{tag}.>") == []
    assert not streams.exists(attacker_key)
    # What the producer sent is there for people to see, under a foreign name.
    headers, stored_target = _stored_headers("m-to-nats")
    assert headers["x-foreign-antidote-redrive-target"] == target
    assert stored_target is None


# --- What was stored before ---------------------------------------------------------------------


def _legacy_commit(label, rows):
    """A messages commit as an earlier release wrote it: no `redrive_target` column, a request's
    target in its header."""
    import pyarrow as pa
    from django.db import transaction

    from console.lake.services import lake_commit_record

    now = datetime(2026, 11, 1, tzinfo=UTC)
    table = pa.Table.from_pylist(
        [
            message_row(
                message_id,
                queue,
                body=b"{}",
                version=version,
                content_type="application/json",
                headers=json.dumps(headers),
                enqueued_at=now,
            )
            for message_id, version, queue, headers in rows
        ]
    )
    store = lake()
    path = store.write_arrow(table, store.new_dir("messages", label))
    with transaction.atomic():
        lake_commit_record(dataset="messages", path=path, row_count=len(rows), idempotency_key=path)
    return path


def test_messages_stored_before_have_a_producers_headers_set_aside_and_a_requests_target_kept(
    db, lake_root
):
    from console.lake.models import LakeCommit
    from console.readmodels.models import MessageIndex
    from console.retention.stored_headers import stored_headers_set_aside

    target = json.dumps({"exchange": "", "routing_key": "orders.retry"}, sort_keys=True)
    forged = json.dumps({"url": "http://attacker.test/"})
    drained = {
        "x-death": "[]",
        "amqp-properties": "{}",
        "amqp-drained-from": "orders.dlq",
        "antidote-source": "orders-rabbitmq",
        "nats-subject": "payments.created",  # the publisher's, not the RabbitMQ source's
    }
    ingested = _legacy_commit(
        "ingest",
        [
            ("api-1", 1, "orders-dead", {"antidote-redrive-target": forged, "tenant": "acme"}),
            ("amqp-1", 1, "orders-dead", drained),
            # Names a source, but not one that feeds this queue: a producer's word.
            ("api-2", 1, "payments", {"antidote-source": "orders-rabbitmq"}),
            ("plain", 1, "orders-dead", {"tenant": "acme"}),
        ],
    )
    retargeted = _legacy_commit(
        "request7-chunk0-target",
        [("amqp-1", 2, "orders-dead", {**drained, "antidote-redrive-target": target})],
    )
    untouched = _legacy_commit("ingest", [("plain-2", 1, "orders-dead", {"tenant": "acme"})])
    MessageIndex.objects.create(
        message_id="api-1",
        queue="orders-dead",
        original_queue="orders-dead",
        state="NDLV",
        delivery_count=1,
        body_path=ingested,
        enqueued_at=datetime(2026, 11, 1, tzinfo=UTC),
        updated_at=datetime(2026, 11, 1, tzinfo=UTC),
    )

    configured = {"sources": {"orders-rabbitmq": ("rabbitmq", "orders-dead")}}
    rewritten = stored_headers_set_aside(**configured, request_targets={7: target})

    assert rewritten == 2
    rows = {
        (r["message_id"], r["version"]): r
        for r in lake().read_arrow("messages", lake_paths(dataset="messages")).to_pylist()
    }
    assert len(rows) == 6

    def stored(message_id, version=1):
        row = rows[(message_id, version)]
        return json.loads(row["headers"]), row["redrive_target"]

    assert stored("api-1") == (
        {"x-foreign-antidote-redrive-target": forged, "tenant": "acme"},
        None,
    )
    kept = {k: v for k, v in drained.items() if k != "nats-subject"}
    assert stored("amqp-1") == ({**kept, "x-foreign-nats-subject": "payments.created"}, None)
    assert stored("amqp-1", 2) == ({**kept, "x-foreign-nats-subject": "payments.created"}, target)
    assert stored("api-2") == ({"x-foreign-antidote-source": "orders-rabbitmq"}, None)
    assert stored("plain") == ({"tenant": "acme"}, None)
    # Each changed commit has a new directory under the same id; the index follows it.
    paths = set(LakeCommit.objects.filter(dataset="messages").values_list("path", flat=True))
    assert ingested not in paths and retargeted not in paths and untouched in paths
    assert not (lake().root / ingested).exists()
    assert MessageIndex.objects.get(message_id="api-1").body_path in paths
    # Run again: nothing left to do.
    assert stored_headers_set_aside(**configured, request_targets={7: target}) == 0
