"""Dead-letter headers from RabbitMQ, Kafka Connect, Kafka Streams, Spring Kafka and the NATS and
Redis Streams drains, read into one shape."""

import json

import pytest

from workers.brokers.dead_letters import DeadLetter, dead_letter_details, dead_letter_of
from workers.brokers.formats.common import REASON_LIMIT, STACK_LIMIT
from workers.brokers.intake import DeadLettered, dead_letter
from workers.engine.handlers import Message


def _death(
    reason="rejected",
    queue="orders",
    exchange="shop",
    keys=("order.created",),
    count=1,
    time="2026-11-24T22:40:00+00:00",
    **extra,
):
    return {
        "count": count,
        "reason": reason,
        "queue": queue,
        "exchange": exchange,
        "routing-keys": list(keys),
        "time": time,
        **extra,
    }


def _rabbit(*deaths, **headers):
    return {"x-death": json.dumps(list(deaths)), **headers}


CONNECT = {
    "__connect.errors.topic": "orders",
    "__connect.errors.partition": "3",
    "__connect.errors.offset": "1234",
    "__connect.errors.connector.name": "orders-sink",
    "__connect.errors.task.id": "0",
    "__connect.errors.stage": "VALUE_CONVERTER",
    "__connect.errors.class.name": "org.apache.kafka.connect.json.JsonConverter",
    "__connect.errors.exception.class.name": "org.apache.kafka.connect.errors.DataException",
    "__connect.errors.exception.message": "Converting byte[] to Kafka Connect data failed",
    "__connect.errors.exception.stacktrace": "org.apache.kafka.connect.errors.DataException: ...",
}

LISTENER_FAILED = "org.springframework.kafka.listener.ListenerExecutionFailedException"

SPRING = {
    "kafka_dlt-original-topic": "orders",
    "kafka_dlt-original-partition": "3",
    "kafka_dlt-original-offset": "1234",
    "kafka_dlt-original-timestamp": "1796078400123",
    "kafka_dlt-original-timestamp-type": "CreateTime",
    "kafka_dlt-original-consumer-group": "billing",
    "kafka_dlt-exception-fqcn": LISTENER_FAILED,
    "kafka_dlt-exception-cause-fqcn": "java.lang.IllegalStateException",
    "kafka_dlt-exception-message": "Listener failed; no price for order 42",
    "kafka_dlt-exception-stacktrace": "java.lang.IllegalStateException: no price\n\tat Billing",
}


# RabbitMQ ------------------------------------------------------------------------------------


def test_an_expired_message_says_it_expired_and_keeps_its_original_expiration():
    dl = dead_letter_of(_rabbit(_death("expired", **{"original-expiration": "60000"})))

    assert dl.exception_type == "amqp.expired"
    assert dl.reason == "expired in queue 'orders'"
    assert ("Original expiration", "60000") in dl.details


def test_a_message_dropped_from_a_full_queue_says_the_queue_was_full():
    dl = dead_letter_of(_rabbit(_death("maxlen")))

    assert dl.exception_type == "amqp.maxlen"
    assert dl.reason == "dropped from queue 'orders': it was full (maxlen)"


def test_a_message_past_its_delivery_limit_says_so():
    dl = dead_letter_of(_rabbit(_death("delivery_limit", queue="orders.quorum")))

    assert dl.exception_type == "amqp.delivery_limit"
    assert dl.reason == "delivery limit reached in queue 'orders.quorum'"


def test_an_unknown_reason_is_reported_but_not_used_as_a_type_name():
    dl = dead_letter_of(_rabbit(_death("eaten-by-a-grue")))

    assert dl.exception_type == "amqp.unknown"
    assert dl.reason == "dead-lettered from queue 'orders' for reason 'eaten-by-a-grue'"


def test_the_most_recent_death_comes_first_and_is_the_redrive_target_with_its_count():
    headers = _rabbit(
        _death(
            "expired",
            queue="orders.retry",
            exchange="retry",
            keys=("orders",),
            count=3,
            time="2026-11-24T22:45:00+00:00",
        ),
        _death(
            "rejected",
            queue="orders",
            exchange="shop",
            keys=("order.created",),
            count=2,
            time="2026-11-24T22:40:00+00:00",
        ),
    )

    dl = dead_letter_of(headers)

    assert dl.exception_type == "amqp.expired"
    assert dl.reason == "expired in queue 'orders.retry'; dead-lettered 3 times"
    assert dl.origin == "RabbitMQ queue 'orders.retry' (exchange 'retry', routing key 'orders')"
    assert (dl.original_queue, dl.original_exchange) == ("orders.retry", "retry")
    assert dl.original_routing_keys == ("orders",)
    assert dl.count == 3
    assert dl.details == (
        ("Original queue", "orders.retry"),
        ("Exchange", "retry"),
        ("Routing keys", "orders"),
        ("Death count", "3"),
        ("Died at", "2026-11-24T22:45:00+00:00"),
        ("Total deaths", "5"),
        (
            "Earlier death 1",
            "rejected by a consumer of queue 'orders' (exchange 'shop', routing keys "
            "'order.created'); 2 times; last at 2026-11-24T22:40:00+00:00",
        ),
    )


def test_a_long_history_of_deaths_shows_only_the_most_recent_few():
    deaths = [_death(queue=f"q{i}") for i in range(30)]

    details = dict(dead_letter_of(_rabbit(*deaths)).details)

    assert "Earlier death 10" in details
    assert "Earlier death 11" not in details
    assert details["Earlier deaths not shown"] == "19"
    assert details["Total deaths"] == "30"


def test_several_routing_keys_are_all_kept_for_the_redrive():
    dl = dead_letter_of(_rabbit(_death(keys=("a", "b"))))

    assert dl.original_routing_keys == ("a", "b")
    assert dl.origin == "RabbitMQ queue 'orders' (exchange 'shop', routing keys 'a', 'b')"
    assert ("Routing keys", "a, b") in dl.details


def test_the_empty_exchange_is_called_the_default_exchange():
    dl = dead_letter_of(_rabbit(_death(exchange="", keys=("orders",))))

    assert dl.origin == "RabbitMQ queue 'orders' (the default exchange, routing key 'orders')"
    assert ("Exchange", "the default exchange") in dl.details
    assert dl.original_exchange == ""


def test_first_death_headers_alone_name_the_target():
    headers = {
        "x-first-death-reason": "rejected",
        "x-first-death-queue": "orders",
        "x-first-death-exchange": "shop",
    }

    dl = dead_letter_of(headers)

    assert dl.kind == "rabbitmq"
    assert dl.exception_type == "amqp.rejected"
    assert dl.reason == "rejected by a consumer of queue 'orders'"
    assert dl.origin == "RabbitMQ queue 'orders' (exchange 'shop')"
    assert (dl.original_queue, dl.original_exchange, dl.original_routing_keys) == (
        "orders",
        "shop",
        (),
    )
    assert dl.count is None
    assert dl.details == (
        ("Original queue", "orders"),
        ("Exchange", "shop"),
        ("First death reason", "rejected"),
        ("First death queue", "orders"),
        ("First death exchange", "shop"),
    )


def test_without_x_death_the_last_death_headers_are_the_redrive_target():
    headers = {
        "x-first-death-reason": "rejected",
        "x-first-death-queue": "orders",
        "x-first-death-exchange": "shop",
        "x-last-death-reason": "expired",
        "x-last-death-queue": "orders.retry",
        "x-last-death-exchange": "",
    }

    dl = dead_letter_of(headers)

    assert dl.exception_type == "amqp.expired"
    assert (dl.original_queue, dl.original_exchange) == ("orders.retry", "")
    assert dl.origin == "RabbitMQ queue 'orders.retry' (the default exchange)"
    assert ("Last death exchange", "the default exchange") in dl.details


def test_a_first_death_on_the_default_exchange_says_so():
    dl = dead_letter_of({"x-first-death-queue": "orders", "x-first-death-exchange": ""})

    assert dl.origin == "RabbitMQ queue 'orders' (the default exchange)"
    assert dl.exception_type == "amqp.unknown"
    assert dl.reason == "dead-lettered from queue 'orders'"


def _malformed(x_death):
    return dead_letter_of(
        {"x-death": x_death, "x-first-death-queue": "orders", "x-first-death-exchange": "shop"}
    )


def test_x_death_that_is_not_json_is_explained_and_the_first_death_names_the_target():
    dl = _malformed("[{count: 1")

    assert dl.kind == "rabbitmq"
    assert dl.exception_type == "amqp.malformed-death-record"
    assert dl.reason.startswith("the x-death header is not valid JSON: ")
    assert (dl.original_queue, dl.original_exchange) == ("orders", "shop")
    assert dl.origin == "RabbitMQ queue 'orders' (exchange 'shop')"
    assert ("Death record (unreadable)", "[{count: 1") in dl.details


def test_x_death_that_is_not_a_list_is_explained():
    dl = _malformed('{"count": 1}')

    assert dl.exception_type == "amqp.malformed-death-record"
    assert dl.reason == "the x-death header is not a list (it is an object)"


def test_an_empty_x_death_list_is_explained():
    assert _malformed("[]").reason == "the x-death header is an empty list"


def test_an_x_death_entry_that_is_not_an_object_is_explained():
    dl = _malformed(json.dumps([_death(), "rejected"]))

    assert dl.exception_type == "amqp.malformed-death-record"
    assert dl.reason == "entry 2 of the x-death header is not an object (it is text)"


def test_an_x_death_entry_missing_a_key_is_explained():
    death = _death()
    del death["queue"]

    assert _malformed(json.dumps([death])).reason == "entry 1 of the x-death header has no 'queue'"


def test_x_death_entries_with_wrong_types_are_explained():
    cases = [
        (_death(count="3"), "has a 'count' that is not a positive whole number"),
        (_death(count=True), "has a 'count' that is not a positive whole number"),
        (_death(count=0), "has a 'count' that is not a positive whole number"),
        (_death(queue=7), "has a 'queue' that is not text"),
        ({**_death(), "routing-keys": "order.created"}, "has 'routing-keys' that are not a list"),
        ({**_death(), "routing-keys": [1]}, "has 'routing-keys' that are not a list"),
        (_death(time=1700000000), "has a 'time' that is not text"),
    ]
    for death, problem in cases:
        dl = _malformed(json.dumps([death]))
        assert dl.exception_type == "amqp.malformed-death-record"
        assert dl.reason.startswith(f"entry 1 of the x-death header {problem}"), death


def test_x_death_nested_deeper_than_python_can_parse_does_not_raise():
    dl = _malformed("[" * 100_000)

    assert dl.exception_type == "amqp.malformed-death-record"
    assert dl.reason.startswith("the x-death header is not valid JSON")


def test_a_malformed_x_death_without_other_headers_still_says_rabbitmq():
    dl = dead_letter_of({"x-death": "nonsense"})

    assert dl.kind == "rabbitmq"
    assert dl.origin == "RabbitMQ (queue unknown)"
    assert dl.original_queue is None


# Kafka Connect -------------------------------------------------------------------------------


def test_partial_kafka_connect_headers_fall_back_to_a_generic_error():
    dl = dead_letter_of({"__connect.errors.topic": "orders", "__connect.errors.stage": "TASK_PUT"})

    assert dl.kind == "kafka-connect"
    assert dl.origin == "Kafka topic 'orders'"
    assert dl.exception_type == "kafka-connect.error"
    assert dl.reason == (
        "Kafka Connect dead-lettered the record: it failed in stage TASK_PUT, "
        "with no exception message"
    )
    assert dl.stack is None
    assert dl.details == (("Topic", "orders"), ("Stage", "TASK_PUT"))


def test_kafka_connect_headers_without_a_topic_say_it_is_unknown():
    dl = dead_letter_of({"__connect.errors.offset": "9"})

    assert dl.origin == "Kafka (topic unknown) offset 9"


# Spring Kafka --------------------------------------------------------------------------------


def test_spring_numbers_that_are_not_decimal_are_shown_as_given():
    headers = {
        "kafka_dlt-original-topic": "orders",
        "kafka_dlt-original-partition": "AAAAAw==",
        "kafka_dlt-original-offset": "AAAAAAAABNI=",
        "kafka_dlt-original-timestamp": "AAABmuV1pXs=",
    }

    dl = dead_letter_of(headers)

    assert dl.origin == "Kafka topic 'orders' partition AAAAAw== offset AAAAAAAABNI="
    assert ("Timestamp", "AAABmuV1pXs=") in dl.details
    assert dl.exception_type == "spring-kafka.error"
    assert dl.reason == "Spring Kafka dead-lettered the record, with no exception message"


def test_a_spring_timestamp_too_large_for_a_date_is_shown_as_given():
    dl = dead_letter_of({"kafka_dlt-original-timestamp": "9223372036854775807"})

    assert ("Timestamp", "9223372036854775807") in dl.details


def test_a_spring_key_deserialization_failure_reads_the_key_exception_headers():
    headers = {
        "kafka_dlt-original-topic": "orders",
        "kafka_dlt-key-exception-fqcn": "org.apache.kafka.common.errors.SerializationException",
        "kafka_dlt-key-exception-message": "bad key",
    }

    dl = dead_letter_of(headers)

    assert dl.exception_type == "org.apache.kafka.common.errors.SerializationException"
    assert dl.reason == "bad key"
    assert ("Failed on", "the record key") in dl.details


# All formats ---------------------------------------------------------------------------------


def test_header_names_are_matched_whatever_their_case():
    rabbit = dead_letter_of({"X-Death": json.dumps([_death("expired")])})
    connect = dead_letter_of({k.upper(): v for k, v in CONNECT.items()})
    spring = dead_letter_of({k.title(): v for k, v in SPRING.items()})
    first = dead_letter_of({"X-First-Death-Queue": "orders"})

    assert rabbit.exception_type == "amqp.expired"
    assert connect == dead_letter_of(CONNECT)
    assert spring == dead_letter_of(SPRING)
    assert first.original_queue == "orders"


def test_rabbitmq_wins_over_kafka_connect_which_wins_over_spring():
    rabbit = _rabbit(_death())

    assert dead_letter_of({**SPRING, **CONNECT, **rabbit}).kind == "rabbitmq"
    assert dead_letter_of({**SPRING, **CONNECT}).kind == "kafka-connect"
    assert dead_letter_of({**SPRING, "x-retry": "1"}).kind == "spring-kafka"


def test_headers_without_a_dead_letter_record_give_none():
    assert dead_letter_of({"content-type": "application/json", "x-retry": "2"}) is None
    assert dead_letter_of({}) is None
    assert dead_letter_details({"content-type": "application/json"}) == ()


def test_huge_values_are_capped():
    huge = "x" * 1_000_000
    connect = dead_letter_of(
        {**CONNECT, "__connect.errors.exception.message": huge, "__connect.errors.topic": huge}
    )
    rabbit = dead_letter_of(_rabbit(_death(queue=huge, keys=(huge,) * 50)))

    assert len(connect.reason) == REASON_LIMIT
    assert connect.reason.endswith("…")
    assert len(connect.origin) <= 2000
    assert all(len(value) <= 2000 for _, value in connect.details)
    assert len(rabbit.reason) <= REASON_LIMIT
    assert len(rabbit.origin) <= 2000
    assert all(len(value) <= 2000 for _, value in rabbit.details)
    # The redrive target is kept whole: it has to match the queue exactly.
    assert rabbit.original_queue == huge


def test_a_long_stack_keeps_its_end_where_the_innermost_frame_is():
    stack = "Traceback (most recent call last):\n" + "  frame\n" * 5000 + "ValueError: bad price"

    dl = dead_letter_of({**SPRING, "kafka_dlt-exception-stacktrace": stack})

    assert len(dl.stack) == STACK_LIMIT
    assert dl.stack.endswith("ValueError: bad price")
    assert dl.stack.startswith("…")


def test_newlines_and_control_characters_cannot_forge_lines_in_the_origin():
    dl = dead_letter_of(_rabbit(_death(queue="orders'\nApproved by: admin\u202e")))

    assert "\n" not in dl.origin
    assert "\u202e" not in dl.origin
    assert dl.origin.startswith("RabbitMQ queue 'orders' Approved by: admin ' (exchange")


def test_the_dead_letter_section_starts_with_kind_origin_exception_and_reason():
    details = dead_letter_details(CONNECT)

    assert details[:4] == (
        ("Kind", "Kafka Connect"),
        ("Origin", "Kafka topic 'orders' partition 3 offset 1234"),
        ("Exception type", "org.apache.kafka.connect.errors.DataException"),
        ("Reason", "Converting byte[] to Kafka Connect data failed"),
    )
    assert details[4:] == dead_letter_of(CONNECT).details


# Kafka Streams (KIP-1034) --------------------------------------------------------------------

STREAMS_STACK = (
    "org.apache.kafka.common.errors.SerializationException: Unknown magic byte!\n"
    "\tat io.confluent.kafka.serializers.AbstractKafkaSchemaSerDe.getByteBuffer"
)
STREAMS = {
    "__streams.errors.exception": (
        "org.apache.kafka.common.errors.SerializationException: Unknown magic byte!"
    ),
    "__streams.errors.message": "Unknown magic byte!",
    "__streams.errors.stacktrace": STREAMS_STACK,
    "__streams.errors.topic": "orders",
    "__streams.errors.partition": "3",
    "__streams.errors.offset": "1234",
}


def test_a_kafka_streams_exception_without_a_message_is_said_so():
    # Java writes a null message as an empty header value; toString() is then the class alone.
    dl = dead_letter_of(
        {
            "__streams.errors.exception": "java.lang.NullPointerException",
            "__streams.errors.message": "",
            "__streams.errors.topic": "orders",
        }
    )

    assert dl.exception_type == "java.lang.NullPointerException"
    assert dl.reason == "Kafka Streams dead-lettered the record, with no exception message"
    assert dl.origin == "Kafka topic 'orders'"


def test_a_kafka_streams_exception_that_is_not_a_class_name_is_not_taken_for_one():
    dl = dead_letter_of({"__streams.errors.exception": "<b>boom</b>: no class here"})

    assert dl.exception_type == "kafka-streams.error"
    assert dl.reason == "<b>boom</b>: no class here"
    assert dl.origin == "Kafka (topic unknown)"


def test_a_kafka_streams_record_is_recognised_in_any_case_and_shown_as_kafka_streams():
    details = dead_letter_details({name.upper(): value for name, value in STREAMS.items()})

    assert details[:2] == (
        ("Kind", "Kafka Streams"),
        ("Origin", "Kafka topic 'orders' partition 3 offset 1234"),
    )


# NATS JetStream ------------------------------------------------------------------------------

NATS_MAX_DELIVER = {
    "nats-subject": "orders.created",
    "nats-stream": "ORDERS",
    "nats-sequence": "42",
    "nats-stored-at": "2026-11-27T10:00:00Z",
    "nats-consumer": "billing",
    "nats-deliveries": "5",
    "nats-advisory": "max_deliver",
    "nats-reason": (
        "max deliveries reached: consumer 'billing' of stream 'ORDERS' gave up after "
        "delivering it 5 times"
    ),
    "nats-headers": '{"Nats-Msg-Id": "order-42"}',
    "Nats-Msg-Id": "order-42",
    "antidote-source": "orders-nats",
}


def test_a_nats_message_terminated_by_its_consumer_gives_the_consumers_reason():
    headers = {
        "nats-stream": "ORDERS",
        "nats-sequence": "7",
        "nats-consumer": "billing",
        "nats-deliveries": "1",
        "nats-advisory": "terminated",
        "nats-terminated-reason": "unknown customer 17",
    }

    dl = dead_letter_of(headers)

    assert dl.exception_type == "nats.terminated"
    assert dl.reason == (
        "terminated by consumer 'billing' of stream 'ORDERS' (AckTerm) after delivering it once: "
        "unknown customer 17"
    )
    assert ("Consumer's reason", "unknown customer 17") in dl.details


def test_without_the_drains_sentence_the_reason_is_made_from_the_advisory():
    headers = {k: v for k, v in NATS_MAX_DELIVER.items() if k != "nats-reason"}

    assert dead_letter_of(headers).reason == (
        "max deliveries reached: consumer 'billing' of stream 'ORDERS' gave up after delivering "
        "it 5 times"
    )


def test_an_unknown_nats_advisory_is_said_and_never_taken_for_a_type():
    dl = dead_letter_of({"nats-advisory": "io.Evil\nType", "nats-deliveries": "lots"})

    assert dl.exception_type == "nats.unknown"
    assert dl.reason == "NATS JetStream advisory 'io.Evil Type'"
    assert dl.origin == "NATS (stream unknown)"
    assert dl.count is None
    assert ("Advisory", "io.Evil Type") in dl.details


def test_the_nats_drains_record_wins_over_records_the_message_carried_from_earlier():
    # A message that died in RabbitMQ once, was moved to NATS by hand, and died there.
    dl = dead_letter_of({**_rabbit(_death()), **CONNECT, **NATS_MAX_DELIVER})

    assert dl.kind == "nats"


# Redis Streams -------------------------------------------------------------------------------

REDIS = {
    "redis-stream": "orders",
    "redis-entry-id": "1764237600000-0",
    "redis-group": "billing",
    "redis-consumer": "worker-2",
    "redis-deliveries": "6",
    "redis-idle-ms": "60000",
    "redis-fields": '[["order_id", "42"]]',
    "order_id": "42",
}


def test_a_redis_entry_with_an_unknown_consumer_and_count_says_so():
    dl = dead_letter_of(
        {**REDIS, "redis-consumer": "", "redis-deliveries": "9" * 40, "redis-group": "g\n"}
    )

    assert dl.count is None
    assert dl.reason == (
        "delivered an unknown number of times to consumer group 'g ' of stream 'orders' without "
        "an acknowledgement; its last consumer is not known (Antidote claimed it before a restart)"
    )


def test_a_redis_stream_header_alone_is_no_record():
    # A field named redis-stream on some other message is not an origin: the entry id must be
    # there too.
    assert dead_letter_of({"redis-stream": "orders"}) is None


# Every kind, read into the same fields -------------------------------------------------------

EACH_KIND = [
    pytest.param(
        _rabbit(_death()),
        "RabbitMQ",
        DeadLetter(
            kind="rabbitmq",
            origin="RabbitMQ queue 'orders' (exchange 'shop', routing key 'order.created')",
            exception_type="amqp.rejected",
            reason="rejected by a consumer of queue 'orders'",
            stack=None,
            details=(
                ("Original queue", "orders"),
                ("Exchange", "shop"),
                ("Routing keys", "order.created"),
                ("Death count", "1"),
                ("Died at", "2026-11-24T22:40:00+00:00"),
            ),
            original_queue="orders",
            original_exchange="shop",
            original_routing_keys=("order.created",),
            count=1,
        ),
        id="a_rejected_message_names_its_original_queue_and_routing_key",
    ),
    pytest.param(
        CONNECT,
        "Kafka Connect",
        DeadLetter(
            kind="kafka-connect",
            origin="Kafka topic 'orders' partition 3 offset 1234",
            exception_type="org.apache.kafka.connect.errors.DataException",
            reason="Converting byte[] to Kafka Connect data failed",
            stack="org.apache.kafka.connect.errors.DataException: ...",
            details=(
                ("Topic", "orders"),
                ("Partition", "3"),
                ("Offset", "1234"),
                ("Connector", "orders-sink"),
                ("Task", "0"),
                ("Stage", "VALUE_CONVERTER"),
                ("Class", "org.apache.kafka.connect.json.JsonConverter"),
                ("Exception class", "org.apache.kafka.connect.errors.DataException"),
            ),
        ),
        id="kafka_connect_headers_give_topic_partition_offset_and_the_exception",
    ),
    pytest.param(
        SPRING,
        "Spring Kafka",
        DeadLetter(
            kind="spring-kafka",
            origin="Kafka topic 'orders' partition 3 offset 1234",
            exception_type=LISTENER_FAILED,
            reason="Listener failed; no price for order 42",
            stack="java.lang.IllegalStateException: no price\n\tat Billing",
            details=(
                ("Topic", "orders"),
                ("Partition", "3"),
                ("Offset", "1234"),
                ("Timestamp", "2026-11-30T22:40:00.123+00:00"),
                ("Timestamp type", "CreateTime"),
                ("Consumer group", "billing"),
                (
                    "Exception class",
                    "org.springframework.kafka.listener.ListenerExecutionFailedException",
                ),
                ("Cause", "java.lang.IllegalStateException"),
            ),
        ),
        id="spring_headers_give_the_timestamp_in_utc_and_the_cause",
    ),
    pytest.param(
        STREAMS,
        "Kafka Streams",
        DeadLetter(
            kind="kafka-streams",
            origin="Kafka topic 'orders' partition 3 offset 1234",
            exception_type="org.apache.kafka.common.errors.SerializationException",
            reason="Unknown magic byte!",
            stack=STREAMS_STACK,
            details=(
                ("Topic", "orders"),
                ("Partition", "3"),
                ("Offset", "1234"),
                ("Exception", STREAMS["__streams.errors.exception"]),
            ),
        ),
        id="a_kafka_streams_dead_letter_names_its_topic_partition_offset_and_exception",
    ),
    pytest.param(
        NATS_MAX_DELIVER,
        "NATS JetStream",
        DeadLetter(
            kind="nats",
            origin="NATS stream 'ORDERS' subject 'orders.created' sequence 42",
            exception_type="nats.max_deliver",
            reason=NATS_MAX_DELIVER["nats-reason"],
            stack=None,
            details=(
                ("Subject", "orders.created"),
                ("Stream", "ORDERS"),
                ("Sequence", "42"),
                ("Stored at", "2026-11-27T10:00:00Z"),
                ("Consumer", "billing"),
                ("Deliveries", "5"),
            ),
            count=5,
        ),
        id="a_nats_dead_letter_names_its_stream_subject_sequence_and_consumer",
    ),
    pytest.param(
        REDIS,
        "Redis Streams",
        DeadLetter(
            kind="redis",
            origin="Redis stream 'orders' entry 1764237600000-0, consumer group 'billing'",
            exception_type="redis.unacknowledged",
            reason=(
                "delivered 6 times to consumer group 'billing' of stream 'orders' without an "
                "acknowledgement; last consumer 'worker-2'"
            ),
            stack=None,
            details=(
                ("Stream", "orders"),
                ("Entry id", "1764237600000-0"),
                ("Consumer group", "billing"),
                ("Last consumer", "worker-2"),
                ("Deliveries", "6"),
                ("Idle (ms)", "60000"),
            ),
            count=6,
        ),
        id="a_redis_dead_letter_names_its_stream_entry_group_and_deliveries",
    ),
]


@pytest.mark.parametrize(("headers", "title", "expected"), EACH_KIND)
def test_each_kind_of_record_is_read_into_the_same_fields_and_named_by_its_title(
    headers, title, expected
):
    assert dead_letter_of(headers) == expected
    assert dead_letter_details(headers)[0] == ("Kind", title)


# The intake handler ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "exception_type"),
    [
        (STREAMS, "org.apache.kafka.common.errors.SerializationException"),
        (NATS_MAX_DELIVER, "nats.max_deliver"),
        (REDIS, "redis.unacknowledged"),
    ],
)
def test_the_intake_quarantines_with_the_reason_each_kind_records(headers, exception_type):
    message = Message(id="m1", queue="dead", body=b"{}", content_type="", headers=headers)

    with pytest.raises(DeadLettered) as raised:
        dead_letter(message)

    assert str(raised.value) == dead_letter_of(headers).reason
    assert raised.value.exception_type == exception_type
