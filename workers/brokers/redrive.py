"""The RabbitMQ redrive handler under the path queue files name: `workers.brokers.redrive.publisher`
(its code is workers.brokers.rabbitmq.sink)."""

from workers.brokers.rabbitmq.sink import publisher

__all__ = ["publisher"]
