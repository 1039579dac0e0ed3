"""manage.py consume_rabbitmq [--source NAME ...]: drain the RabbitMQ sources until stopped.

One line per state change of a source. With no source configured it says so and keeps checking,
so that `make run` can start it always. SIGTERM or Ctrl-C stops it: each source stores the batch
it holds, then closes its connection.
"""

import signal
import threading

from django.core.management.base import BaseCommand

from console.ingest.rabbitmq import consumers_run


class Command(BaseCommand):
    help = "Drain the RabbitMQ sources (dead-letter queues) into their Antidote queues."

    def add_arguments(self, parser):
        parser.add_argument(
            "--source",
            action="append",
            dest="sources",
            metavar="NAME",
            help="drain only this source (may be repeated)",
        )

    def handle(self, *args, sources, **options):
        stop = threading.Event()

        def on_signal(signum, frame):
            # Event.set takes a lock the interrupted main thread may hold: set it from a thread.
            threading.Thread(target=stop.set).start()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        lock = threading.Lock()

        def say(line):
            with lock:
                self.stdout.write(line)
                self.stdout.flush()

        consumers_run(stop=stop, only=sources, say=say)
        say("stopped")
