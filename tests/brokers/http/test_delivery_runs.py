"""HTTP delivery through the real engine: delivery runs on local Spark (and the same runs without
Spark), a queue whose handler is workers.brokers.http.poster, a real receiver."""

from datetime import timedelta

import pytest
from standardwebhooks import Webhook

from tests.brokers.http.conftest import SECRET
from tests.brokers.http.receiver import Answer
from tests.delivery.conftest import T0, both_paths
from workers.engine import states as S

pytestmark = [pytest.mark.spark, both_paths]

POSTER = "workers.brokers.http.poster"
BODY = b'{"order": 42}'


@pytest.fixture
def signing(spark, monkeypatch):
    """The secret in the environment of this process (runs without Spark) and of Spark's Python
    workers, which take theirs from the context's environment, not from this process."""
    monkeypatch.setenv("ANTIDOTE_WEBHOOK_SECRET", SECRET)
    environment = spark.sparkContext.environment
    environment["ANTIDOTE_WEBHOOK_SECRET"] = SECRET
    yield
    environment.pop("ANTIDOTE_WEBHOOK_SECRET", None)


def test_a_retry_after_sets_the_wait_and_the_message_is_delivered_after_it(
    engine, receiver, signing
):
    server = receiver(
        Answer(500),
        Answer(429, headers={"Retry-After": "3600"}),
        Answer(200),
    )
    engine.queue(
        "hooks",
        handler=POSTER,
        handler_options={"url": server.url},
        backoff_delays=[60],
        max_failed_deliveries=5,
    )
    (mid,) = engine.ingest(
        "hooks", [BODY], content_type="application/json", headers={"x-tenant": "acme"}
    )

    engine.deliver(at=T0)
    state = engine.state(mid)
    assert (state["state"], state["next_attempt_at"]) == (S.WAIT, T0 + timedelta(seconds=60))
    assert state["reason"] == f"http://127.0.0.1:{server.port} answered 500 Internal Server Error"

    # The 429 asks for an hour, more than the backoff's minute: the hour wins.
    second = T0 + timedelta(seconds=61)
    engine.deliver(at=second)
    state = engine.state(mid)
    assert (state["state"], state["next_attempt_at"]) == (S.WAIT, second + timedelta(hours=1))
    assert state["reason"].endswith("answered 429 Too Many Requests; Retry-After 3600 s")

    # Past the backoff, before the Retry-After: not due.
    assert engine.deliver(at=second + timedelta(minutes=5)).claimed == 0
    assert len(server.received) == 2

    engine.deliver(at=second + timedelta(hours=1))
    assert engine.state(mid)["state"] == S.DLVD
    assert len(server.received) == 3
    for received in server.received:
        headers = dict(received.headers)
        Webhook(SECRET).verify(received.body, headers, json_parse=False)
        assert received.body == BODY
        assert (headers["webhook-id"], headers["x-tenant"]) == (mid, "acme")
        assert headers["Content-Type"] == "application/json"


def test_a_422_quarantines_at_once_with_the_answer_as_the_reason(engine, receiver, signing):
    server = receiver(Answer(422, b'{"error": "customer is required"}'))
    engine.queue("hooks", handler=POSTER, handler_options={"url": server.url})
    (mid,) = engine.ingest("hooks", [BODY])
    engine.deliver(at=T0)
    state = engine.state(mid)
    assert state["state"] == S.NDLV
    assert state["reason"] == (
        f"{S.REASON_PERMANENT}: http://127.0.0.1:{server.port} answered 422 Unprocessable "
        'Entity: {"error": "customer is required"}'
    )
    assert state["exception_type"] == "http.422"
    assert len(server.received) == 1
