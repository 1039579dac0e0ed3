"""manage.py seed_demo: roles, demo users, the demo queues and a few thousand demo messages.

Idempotent: roles and queues are brought up to date, users get fresh passwords (printed), and the
messages are generated and ingested only when the demo set is not already there. Even then, ingest
deduplicates by id and body, so a second ingest of the same file accepts nothing.

With --background (`make run`), the messages are not ingested here: the default worker sends them
a chunk at a time (console.ingest.demo) while the dashboard shows the demo filling, so that the
web starts at once and the first quarantined messages come within seconds of the workers'.
"""

import logging
import os
from contextlib import contextmanager
from pathlib import Path

import pika.exceptions
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from console.access.actor import cli_actor
from console.ingest.demo import (
    INGEST_SOURCE,
    demo_fill_start,
    demo_filled_mark,
    demo_get,
    demo_record,
)
from console.ingest.models import MessageKey
from console.ingest.tasks import demo_fill_enqueue
from console.queues.models import BrokerSource
from console.queues.services import QueueLoadError, queues_load
from workers.demo import nats as demo_nats
from workers.demo import rabbitmq as demo_rabbitmq
from workers.demo import redis_streams as demo_redis
from workers.demo.data import DEFAULT_ORDERS, QUEUES_FILE, demo_file_write, demo_message_ids
from workers.demo.feed import DemoOff


@contextmanager
def _pika_quiet():
    """pika logs a refused connection at ERROR with its traceback, before raising it: a
    newcomer without RabbitMQ would see one at every `make run`. The line below says it."""
    logger = logging.getLogger("pika")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _already_ingested(ids):
    present = 0
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        present += MessageKey.objects.filter(message_id__in=chunk).count()
    return present


class Command(BaseCommand):
    help = (
        "Seed a demo: roles, one user per role (passwords printed), the queues of "
        "workers/demo/queues.yaml, and a demo message set ingested through the real ingest path."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--orders",
            type=int,
            default=DEFAULT_ORDERS,
            help=f"orders to generate (default {DEFAULT_ORDERS}; each brings about one more "
            "message in the other queues)",
        )
        parser.add_argument(
            "--background",
            action="store_true",
            help="let the default worker send the messages, a chunk every few seconds, while "
            "the dashboard shows the demo filling (make run), instead of ingesting them here",
        )

    def handle(self, *args, orders, background, **options):
        if orders < 1:
            raise CommandError("--orders must be at least 1")
        call_command("seed_roles", stdout=self.stdout, stderr=self.stderr)
        call_command("create_demo_users", stdout=self.stdout, stderr=self.stderr)
        call_command("load_queues", str(QUEUES_FILE), stdout=self.stdout, stderr=self.stderr)
        self._rabbitmq_demo()
        self._stream_demo(title="NATS", demo=demo_nats, fed_field="nats_fed_at")
        self._stream_demo(title="Redis", demo=demo_redis, fed_field="redis_fed_at")

        ids = demo_message_ids(orders=orders)
        present = _already_ingested(ids)
        if present == len(ids):
            demo_filled_mark()
            self.stdout.write(f"Demo messages: all {len(ids)} already ingested; nothing to do.")
            return
        if background:
            demo = demo_fill_start(orders=orders, total=len(ids), enqueue=demo_fill_enqueue)
            left = f"{len(ids) - demo.sent} of {len(ids)} left" if demo.sent else f"{len(ids)}"
            self.stdout.write(
                f"Demo messages: {left} to send; the default worker sends them a few hundred at "
                "a time, and the dashboard shows how far it is."
            )
            self.stdout.write(self.style.SUCCESS("Demo ready."))
            return

        try:
            from console.ingest.services import ingest_file
        except ImportError as exc:
            raise CommandError(f"cannot ingest the demo messages: {exc}") from exc

        path = Path(settings.VAR_DIR) / "demo" / "demo-messages.jsonl"
        counts = demo_file_write(path, orders=orders)
        summary = ", ".join(f"{queue} {n}" for queue, n in counts.items())
        self.stdout.write(f"Demo messages: wrote {sum(counts.values())} to {path} ({summary})")
        result = ingest_file(path=path, source=INGEST_SOURCE)
        self.stdout.write(
            f"Demo messages: {result.accepted} accepted, {result.duplicates} already there, "
            f"{result.refused} refused"
        )
        if result.refused:
            shown = "\n".join(f"  - {error}" for error in result.errors[:10])
            raise CommandError(f"ingest refused {result.refused} demo message(s):\n{shown}")
        self.stdout.write(self.style.SUCCESS("Demo ready."))

    def _rabbitmq_demo(self):
        """The RabbitMQ-fed queue, when RabbitMQ answers; otherwise how to get it. The embedded
        default needs no server, so a missing broker is a note, not an error."""
        url = os.environ.get(demo_rabbitmq.URL_ENV)
        if not url:
            self.stdout.write(
                f"RabbitMQ demo: off ({demo_rabbitmq.URL_ENV} is not set). Set it to an AMQP URL "
                "(make run sets amqp://guest:guest@127.0.0.1:5672/%2F) to get a RabbitMQ-fed queue."
            )
            return
        where = demo_rabbitmq.broker_where(url)
        demo = demo_get()
        # Whether this database's demo was fed: a new one (var/ deleted) is fed again. A source
        # draining the demo's DLQ answers for a database seeded before the record was kept.
        fed_here = (demo is not None and demo.rabbitmq_fed_at is not None) or (
            BrokerSource.objects.filter(broker_queue=demo_rabbitmq.DEAD_LETTER_QUEUE).exists()
        )
        try:
            with _pika_quiet():
                feed = demo_rabbitmq.demo_dead_letters(url, fed_here=fed_here)
        except (OSError, pika.exceptions.AMQPError) as exc:
            self.stdout.write(
                f"RabbitMQ demo: off (RabbitMQ does not answer at {where}: "
                f"{exc.__class__.__name__}). Start it (rabbitmq-server -detached, or "
                "docker run -p 5672:5672 rabbitmq) and run make run again for a RabbitMQ-fed queue."
            )
            return
        call_command(
            "load_queues", demo_rabbitmq.QUEUES_FILE, stdout=self.stdout, stderr=self.stderr
        )
        if not fed_here:
            demo_record(rabbitmq_fed_at=timezone.now())
        dead_letter_queue = demo_rabbitmq.DEAD_LETTER_QUEUE
        self._feed_say(
            "RabbitMQ",
            where,
            feed,
            fed_here,
            fed=f"{feed.fed} refunds dead-lettered to {dead_letter_queue}",
            waiting=f"{feed.waiting} dead letters already waiting in {dead_letter_queue}",
            into="the sources process drains them into queue refunds-dead.",
        )

    def _stream_demo(self, *, title, demo, fed_field):
        """The NATS- or Redis-fed queue (`demo` is workers.demo.nats or .redis_streams), when
        that server answers; otherwise how to get it, as for RabbitMQ."""
        url = os.environ.get(demo.URL_ENV)
        if not url:
            self.stdout.write(
                f"{title} demo: off ({demo.URL_ENV} is not set). Set it (make run sets "
                f"{demo.MAKE_RUN_URL}) to get a {title}-fed queue."
            )
            return
        names = demo.NAMES
        where = demo.server_where(url)
        record = demo_get()
        # Whether this database's demo was fed: a new one (var/ deleted) is fed again.
        fed_here = record is not None and getattr(record, fed_field) is not None
        try:
            feed = demo.demo_dead_letters(url, fed_here=fed_here, names=names)
        except DemoOff as exc:
            self.stdout.write(
                f"{title} demo: off ({exc} and run make run again for a {title}-fed queue)."
            )
            return
        document = demo.demo_queues(names)
        try:
            queues_load(data=document, actor=cli_actor())
        except QueueLoadError as exc:
            # The demo's own file: a refusal is a bug, said loudly.
            raise CommandError(
                f"{demo.QUEUES_FILE}: refused:\n" + "\n".join(f"  - {e}" for e in exc.errors)
            ) from exc
        if not fed_here:
            demo_record(**{fed_field: timezone.now()})
        (source,) = document["sources"]
        self._feed_say(
            title,
            where,
            feed,
            fed_here,
            fed=demo.fed_said(names, feed.fed),
            waiting=f"{feed.waiting} dead letters of stream {names.stream} already waiting",
            into=f"the sources process drains them into queue {source['queue']}.",
        )

    def _feed_say(self, title, where, feed, fed_here, *, fed, waiting, into):
        """What a broker demo's feed did, in its own words: dead letters sent now, sent before
        for this database, or found already waiting on the broker."""
        if feed.fed:
            self.stdout.write(f"{title} demo: {fed} at {where}; {into}")
        elif fed_here:
            self.stdout.write(f"{title} demo: already fed at {where}.")
        else:
            self.stdout.write(f"{title} demo: {waiting} at {where}; {into}")
