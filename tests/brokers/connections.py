"""The tests' own connections to RabbitMQ (publishing, rejecting, reading what arrived)."""

import pika


def quiet_parameters(url):
    """pika parameters for a test's connection that sits idle while Spark runs: no heartbeats,
    or the broker closes it after a minute of a slow machine."""
    parameters = pika.URLParameters(url)
    parameters.heartbeat = 0
    return parameters
