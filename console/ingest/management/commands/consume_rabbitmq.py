"""manage.py consume_rabbitmq [--source NAME ...]: `consume_sources --kind rabbitmq`, under the
name it had before every broker had a source (scripts and units that start it keep working)."""

from console.ingest.management.commands import consume_sources


class Command(consume_sources.Command):
    help = "Drain the RabbitMQ sources (dead-letter queues) into their Antidote queues."
    kinds = ("rabbitmq",)
