"""A broker source for the tests that need one on a page, in an alert or in the processes' health.
objects.create: these tests set its state themselves, no consumer runs."""

from console.queues.models import BrokerSource, Queue


def orders_dlq(url_env, broker_queue, *, queue=None, **fields):
    """The RabbitMQ source orders-dlq, reading `broker_queue` from the broker at the URL in the
    variable `url_env`, for `queue` (the orders queue unless told)."""
    queue = queue or Queue.objects.get(name="orders")
    return BrokerSource.objects.create(
        name="orders-dlq",
        kind="rabbitmq",
        url_env=url_env,
        broker_queue=broker_queue,
        queue=queue,
        **fields,
    )
