"""The embedded broker: a consumer taking messages while they are being published never gets
half a message (kombu's own filesystem transport can hand it an empty file)."""

import threading

from kombu import Connection


def _connection(folder):
    # The control folder too: kombu's default is "control" in the working directory.
    options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "control_folder": str(folder / "control"),
    }
    return Connection(
        "filesystem://", transport="workers.broker:Transport", transport_options=options
    )


def test_a_consumer_racing_the_producer_gets_every_message_whole(tmp_path):
    sent = [{"n": i, "padding": "x" * 5000} for i in range(300)]
    received = []

    def produce():
        with _connection(tmp_path) as conn:
            queue = conn.SimpleQueue("race")
            for message in sent:
                queue.put(message)
            queue.close()

    with _connection(tmp_path) as conn:
        queue = conn.SimpleQueue("race")
        producer = threading.Thread(target=produce)
        producer.start()
        while len(received) < len(sent):
            message = queue.get(timeout=30)
            received.append(message.payload)
            message.ack()
        producer.join()
        queue.close()

    assert sorted(m["n"] for m in received) == list(range(300))
    assert all(m["padding"] == "x" * 5000 for m in received)
    assert not list(tmp_path.glob(".*.tmp"))


def test_the_settings_use_it_for_the_embedded_broker(settings):
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        assert settings.CELERY_BROKER_TRANSPORT == "workers.broker:Transport"
