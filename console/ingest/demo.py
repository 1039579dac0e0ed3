"""The demo's messages sent a chunk at a time (`seed_demo --background`, as `make run` does): the
web is up at once, the first poison messages are quarantined within seconds, and the dashboard
shows the demo filling (console.browse reads `demo_progress`).

`seed_demo` records the fill (`demo_fill_start`) and hands it to the default worker, whose task
sends one chunk (`demo_fill_step`) and asks for the next a few seconds later. A chunk goes through
the real ingest path, which deduplicates: a chunk sent twice (a task delivered twice, a fill
resumed by the next `make run` after a Ctrl-C) accepts nothing the second time. Of two tasks that
sent the same chunk, the one that records it first goes on; the other stops.
"""

import logging
from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from console.ingest.models import Demo
from console.ingest.services import messages_ingest
from workers.demo.data import (
    FILL_CHUNK,
    FILL_EVERY_SECONDS,
    FILL_FIRST,
    FILL_FIRST_PAUSE_SECONDS,
    demo_fill_records,
)

log = logging.getLogger(__name__)

INGEST_SOURCE = "seed_demo"
# The dashboard says the demo is filled for this long after its last chunk, then nothing.
DONE_SHOWN = timedelta(minutes=10)
# A fill that sent nothing for this long waits for the default worker (not started, or stopped).
WAITING_AFTER = timedelta(seconds=60)


def demo_get():
    """This database's demo record, or None before `seed_demo` first ran."""
    return Demo.objects.filter(pk=Demo.ONE).first()


def demo_record(**values):
    """Create or update the demo record with `values`; returns it."""
    demo, _ = Demo.objects.update_or_create(pk=Demo.ONE, defaults=values)
    return demo


def demo_fill_start(*, orders, total, enqueue):
    """Record a fill of the demo set of `orders` orders (`total` messages) and hand it over with
    `enqueue()` once committed. A fill of the same set that stopped half-way goes on where it
    was; another set starts from its first message. Returns the Demo."""
    now = timezone.now()
    with transaction.atomic():
        demo, _ = Demo.objects.select_for_update().get_or_create(pk=Demo.ONE)
        same = demo.fill_started_at is not None and (demo.orders, demo.total) == (orders, total)
        demo.orders, demo.total = orders, total
        if not same:
            demo.sent, demo.fill_started_at, demo.sent_at = 0, now, None
        demo.filled_at = None
        demo.save()
        transaction.on_commit(enqueue, robust=True)
    return demo


def demo_filled_mark():
    """Every demo message is in (ingested at once, or by an earlier fill): a fill that a lost
    task left half-way is over."""
    now = timezone.now()
    Demo.objects.filter(pk=Demo.ONE, fill_started_at__isnull=False, filled_at__isnull=True).update(
        sent=F("total"), sent_at=now, filled_at=now
    )


def demo_fill_step():
    """Send the next chunk of the fill. Returns the seconds to wait before the next one, or None
    when the fill is over (or another task is sending it)."""
    demo = demo_get()
    if demo is None or demo.fill_started_at is None or demo.filled_at is not None:
        return None
    start = demo.sent
    size = FILL_FIRST if start == 0 else FILL_CHUNK
    chunk = demo_fill_records(orders=demo.orders)[start : start + size]
    result = messages_ingest(records=chunk, source=INGEST_SOURCE)
    if result.refused:
        # The demo's own data: a refusal is a bug, said loudly, and the fill goes on.
        log.error("the demo fill: %s message(s) refused: %s", result.refused, result.errors[:5])
    end = start + len(chunk)
    done = not chunk or end >= demo.total
    now = timezone.now()
    won = Demo.objects.filter(pk=Demo.ONE, sent=start, filled_at__isnull=True).update(
        sent=end, sent_at=now, filled_at=now if done else None
    )
    if won != 1:
        return None  # another task sent this chunk and goes on
    if done:
        return None
    return FILL_FIRST_PAUSE_SECONDS if start == 0 else FILL_EVERY_SECONDS


def demo_progress(*, now=None):
    """What the dashboard says of the demo: None when no fill runs (nor ended a few minutes
    ago), else {"total", "sent", "filling", "waiting" (for the default worker), "filled_at"}."""
    demo = demo_get()
    if demo is None or demo.fill_started_at is None:
        return None
    now = now or timezone.now()
    if demo.filled_at is not None and now - demo.filled_at > DONE_SHOWN:
        return None
    filling = demo.filled_at is None
    return {
        "total": demo.total,
        "sent": demo.sent,
        "filling": filling,
        "waiting": filling and now - (demo.sent_at or demo.fill_started_at) > WAITING_AFTER,
        "filled_at": demo.filled_at,
    }
