"""RabbitMQ for bench_brokers: dead letters made its way (persistent messages rejected by their
queue's consumer, dead-lettered with their x-death record into a DLQ), the bare client loops
beside the product's (pika consume + ack; py-amqp publish with pipelined confirms) and what
confirms a redrive (the original queue's depth).

Three identical batches: `p` for the product, `b` for the bare loops, `f` for the redrive's floor
(drained by the product, then reprocessed to a handler that does nothing). Queue names carry a
tag of the run's own; `close` deletes them."""

import time

from bench.support import RABBITMQ_SERVER

URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
URL_ENV = "BENCH_AMQP_URL"
HOST, PORT = "127.0.0.1", 5672
# The consumer's prefetch, as the product's source below is given.
PREFETCH = 5000
ACK_EVERY = 1000
CONFIRM_WINDOW = 5000


class RabbitMQ:
    kind = "rabbitmq"
    title = "RabbitMQ"
    servers = RABBITMQ_SERVER
    url, url_env = URL, URL_ENV
    sink = "workers.brokers.redrive.publisher"
    bare_drain_said = "pika consume + ack"
    bare_publish_said = "py-amqp publish, pipelined confirms"

    def __init__(self, tag, body):
        import pika

        self.body = body
        self.queues = {
            b: (f"bench.brokers.{tag}.{b}", f"bench.brokers.{tag}.{b}.dlq") for b in "pbf"
        }
        self.connection = pika.BlockingConnection(pika.URLParameters(URL + "?heartbeat=0"))
        self.channel = self.connection.channel()
        for work, dlq in self.queues.values():
            self.channel.queue_declare(dlq, durable=True)
            self.channel.queue_declare(
                work,
                durable=True,
                arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq},
            )

    def dead_letters(self, batch, n):
        """n persistent messages published to the batch's queue and rejected by its consumer:
        RabbitMQ dead-letters each to the DLQ with its x-death record."""
        import pika

        work, dlq = self.queues[batch]
        channel = self.channel
        for i in range(n):
            properties = pika.BasicProperties(
                delivery_mode=2, message_id=f"{batch}{i:08d}", content_type="text/plain"
            )
            channel.basic_publish("", work, self.body, properties)
        channel.basic_qos(prefetch_count=PREFETCH)
        for rejected, (method, _, _) in enumerate(channel.consume(work, inactivity_timeout=5), 1):
            if method is None:
                break
            if rejected % ACK_EVERY == 0 or rejected == n:
                channel.basic_nack(method.delivery_tag, multiple=True, requeue=False)
            if rejected == n:
                break
        channel.cancel()
        while self._depth(dlq) < n:
            time.sleep(0.2)

    def _depth(self, queue):
        return self.channel.queue_declare(queue, passive=True).method.message_count

    def source(self, batch):
        """The batch's source's entry in the queue file, but for its name and queues."""
        return {"broker_queue": self.queues[batch][1]}

    def bare_drain(self, n):
        """The bare loop: consume the b batch's DLQ with pika and acknowledge (every 1,000, as
        the product acknowledges a batch), storing nothing. Returns what it took."""
        channel = self.channel
        channel.basic_qos(prefetch_count=PREFETCH)
        taken = 0
        for method, _, _ in channel.consume(self.queues["b"][1], inactivity_timeout=5):
            if method is None:
                break
            taken += 1
            if taken % ACK_EVERY == 0 or taken == n:
                channel.basic_ack(method.delivery_tag, multiple=True)
            if taken == n:
                break
        channel.cancel()
        return taken

    def drained(self, batch, source):
        return self._depth(self.queues[batch][1]) == 0

    def origin_count(self):
        """Messages in the p batch's original queue: where its redrive lands."""
        return self._depth(self.queues["p"][0])

    def bare_publish(self, n):
        """The bare publish: n persistent messages to the b batch's original queue with py-amqp
        (the sink's client), at most CONFIRM_WINDOW waiting for their confirms at once."""
        import amqp

        # RabbitMQ's default account on this machine, as URL says.
        connection = amqp.Connection(f"{HOST}:{PORT}", userid="guest", password="guest")  # noqa: S106
        connection.connect()
        channel = connection.channel()
        channel.confirm_select()
        confirmed = [0]

        def on_ack(tag, multiple):
            # One channel, one queue: confirms come in order, a multiple one for all before.
            confirmed[0] = max(confirmed[0], tag)

        channel.events["basic_ack"].add(on_ack)
        work = self.queues["b"][0]
        for sent in range(1, n + 1):
            message = amqp.Message(self.body, delivery_mode=2, content_type="text/plain")
            channel.basic_publish(message, exchange="", routing_key=work)
            while sent - confirmed[0] >= CONFIRM_WINDOW:
                connection.drain_events(timeout=30)
        while confirmed[0] < n:
            connection.drain_events(timeout=30)
        connection.close()
        return confirmed[0]

    def close(self):
        for work, dlq in self.queues.values():
            for queue in (work, dlq, dlq + ".antidote-refused"):
                self.channel.queue_delete(queue)
        self.connection.close()


BROKER = RabbitMQ
