"""The demo's RabbitMQ-fed queue: when RabbitMQ answers, `seed_demo` feeds a dead-letter queue
once and loads the source that drains it; when it does not, the demo goes on without it and says
how to get it. Each test has a RabbitMQ virtual host of its own."""

import json
import subprocess
import uuid

import pika
import pytest

from tests.conftest import require_service
from tests.demo.broker_demos import BrokerDemoTests
from tests.demo.sources import demo_seed, demo_source
from workers.brokers.dead_letters import dead_letter_of
from workers.demo import rabbitmq as demo

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("demo_dirs")]


@pytest.fixture
def vhost(monkeypatch):
    require_service("RabbitMQ", port=5672)
    require_service("rabbitmqctl", path="rabbitmqctl")
    name = f"antidote-demo-{uuid.uuid4().hex[:8]}"
    ctl = ["rabbitmqctl", "-q"]
    subprocess.run([*ctl, "add_vhost", name], check=True, capture_output=True)
    subprocess.run(
        [*ctl, "set_permissions", "-p", name, "guest", ".*", ".*", ".*"],
        check=True,
        capture_output=True,
    )
    url = f"amqp://guest:guest@127.0.0.1:5672/{name}"
    monkeypatch.setenv(demo.URL_ENV, url)
    yield url
    subprocess.run([*ctl, "delete_vhost", name], check=False, capture_output=True)


def _dead_letters(url):
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    found = []
    while True:
        method, properties, _ = channel.basic_get(demo.DEAD_LETTER_QUEUE, auto_ack=False)
        if method is None:
            break
        found.append(properties)
    connection.close()  # unacknowledged: they stay in the queue
    return found


def test_with_rabbitmq_the_demo_feeds_a_dead_letter_queue_once_and_drains_it(vhost):
    output = demo_seed()

    assert f"{demo.REFUNDS} refunds dead-lettered to {demo.DEAD_LETTER_QUEUE}" in output
    assert "guest:guest" not in output
    demo_source("refunds-dlq", dead="refunds-dead", redrive="refunds-redrive", url_env=demo.URL_ENV)
    dead = _dead_letters(vhost)
    assert len(dead) == demo.REFUNDS
    reasons = {
        dead_letter_of({"x-death": json.dumps(p.headers["x-death"], default=str)}).exception_type
        for p in dead
    }
    assert reasons <= {"amqp.rejected", "amqp.expired"} and "amqp.rejected" in reasons

    again = demo_seed()

    assert "RabbitMQ demo: already fed" in again
    assert len(_dead_letters(vhost)) == demo.REFUNDS


def _drain(url):
    """Take every dead letter, as the sources process of an earlier `make run` did."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    taken = 0
    while channel.basic_get(demo.DEAD_LETTER_QUEUE, auto_ack=True)[0] is not None:
        taken += 1
    connection.close()
    return taken


class TestTheRabbitmqDemo(BrokerDemoTests):
    title = "RabbitMQ"
    count = demo.REFUNDS
    source = "refunds-dlq"
    url_env = demo.URL_ENV
    unreachable_url = "amqp://guest:secret@127.0.0.1:1/%2F"
    off_line = "RabbitMQ demo: off (RabbitMQ does not answer at 127.0.0.1:1/%2F"

    @pytest.fixture
    def broker(self, vhost):
        return vhost

    def waiting(self, broker):
        return len(_dead_letters(broker))

    def drain_all(self, broker):
        return _drain(broker)

    def fed_line(self, broker):
        return f"{demo.REFUNDS} refunds dead-lettered to {demo.DEAD_LETTER_QUEUE}"

    def still_waiting_line(self, broker):
        return f"{demo.REFUNDS} dead letters already waiting in {demo.DEAD_LETTER_QUEUE}"
