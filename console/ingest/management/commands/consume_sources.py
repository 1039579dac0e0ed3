"""manage.py consume_sources [--source NAME ...] [--kind KIND ...]: drain the broker sources
until stopped.

Every enabled source of every kind (RabbitMQ, NATS JetStream, Redis Streams), or only those
named or of the kinds named, one thread each. One line per state change of a source. With no
source configured it says so and keeps checking, so that `make run` can start it always.
SIGTERM or Ctrl-C stops it: each source stores the batch it holds, then closes its connection.
"""

import signal
import threading

from django.core.management.base import BaseCommand

from console.ingest.consumers import consumers_run
from console.processes.beating import beating_start, beating_stop
from console.processes.models import SOURCES
from console.queues.models import SOURCE_KINDS


class Command(BaseCommand):
    help = "Drain the broker sources (dead letters of every kind) into their Antidote queues."
    # The kinds drained when none is named; consume_rabbitmq narrows it.
    kinds = None

    def add_arguments(self, parser):
        parser.add_argument(
            "--source",
            action="append",
            dest="sources",
            metavar="NAME",
            help="drain only this source (may be repeated)",
        )
        if self.kinds is None:
            parser.add_argument(
                "--kind",
                action="append",
                dest="kinds",
                choices=SOURCE_KINDS,
                help="drain only the sources of this kind (may be repeated)",
            )

    def handle(self, *args, sources, kinds=None, **options):
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

        # The process's own heartbeat (the Processes page); each source beats on its own row.
        beating_start(SOURCES)
        try:
            consumers_run(stop=stop, only=sources, kinds=self.kinds or kinds, say=say)
        finally:
            beating_stop()
        say("stopped")
