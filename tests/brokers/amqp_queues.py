"""What a RabbitMQ queue holds, as the tests read it back."""


def messages_taken(channel, queue):
    """Every message waiting in `queue` now, as a pika consumer receives them, taken
    (acknowledged) for good: [(properties, body)]."""
    taken = []
    while True:
        method, properties, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            return taken
        taken.append((properties, body))
