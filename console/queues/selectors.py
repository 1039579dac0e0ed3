"""Reads for the queues page and its API: each queue with its policy, status and messages by state,
how its policy and status came to be (its audit entries), and its broker sources (what their
consumers are doing, for the stats API too)."""

from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from console.audit.models import AuditEntry
from console.queues import counts
from console.queues.models import INTAKE_ROUTES, POLICY_FIELDS, BrokerSource, Queue, QueueIntake
from console.queues.policy_words import policy_sentences, relapse, relapse_words
from console.queues.sources import HEARTBEAT_STALE, source_connector_config
from console.rows import from_row
from workers.brokers.registry import KIND_TITLES, connector_loaded

NOT_RUNNING = "not running"


@dataclass(frozen=True)
class Intake:
    """One way a queue's messages come in, for people: "RabbitMQ" and what it drains, "API"."""

    title: str
    detail: str  # what a broker source drains, and its name; "" for the other routes
    last_at: datetime | None  # when messages last came in this way (None: not since noted)


@dataclass
class QueueOverview:
    name: str
    queue: Queue | None  # None: messages in the index for a queue that no longer exists
    counts: list  # [(state, n)]
    total: int
    stats_at: datetime | None
    sources: list = field(default_factory=list)  # [Intake]: where its messages come from

    @property
    def policy(self):
        if self.queue is None:
            return []
        return [(name, getattr(self.queue, name)) for name in POLICY_FIELDS]

    @property
    def policy_words(self):
        """The policy as the queues page says it: [(topic, sentence)] (policy_words)."""
        return [] if self.queue is None else policy_sentences(self.queue)


def queue_overview():
    """Every queue with its policy, status, message counts per state (console.queues.counts:
    the read models') and where its messages come from (queue_intakes)."""
    counted = counts.per_queue()
    queues = {q.name: q for q in Queue.objects.all()}
    intakes = queue_intakes()
    result = []
    for name in sorted(set(queues) | set(counted)):
        by_state, stats_at = counted.get(name, ([], None))
        result.append(
            QueueOverview(
                name=name,
                queue=queues.get(name),
                counts=by_state,
                total=sum(n for _, n in by_state),
                stats_at=stats_at,
                sources=intakes.get(name, []),
            )
        )
    return result


def queue_intakes():
    """{queue name: [Intake]}: where each queue's messages come from. First its broker sources
    as configured (by broker, with what each drains), then every other way messages came in
    (the API, by hand, the inbox folder...), as ingest noted it (QueueIntake), latest first. A
    broker's route is not said twice when a source of it is configured. Two queries, whatever
    the number of queues."""
    found = {}
    configured = set()
    sources = BrokerSource.objects.order_by("name").values_list(
        "queue__name", "kind", "name", "broker_queue", "last_drained_at"
    )
    for queue, kind, name, drained, last_at in sources:
        title = KIND_TITLES.get(kind, kind)
        found.setdefault(queue, []).append(Intake(title, f"{drained} (source {name})", last_at))
        configured.add((queue, kind))
    noted = QueueIntake.objects.order_by("-last_at", "route").values_list(
        "queue", "route", "last_at"
    )
    for queue, route, last_at in noted:
        if (queue, route) not in configured and route in INTAKE_ROUTES:
            found.setdefault(queue, []).append(Intake(INTAKE_ROUTES[route], "", last_at))
    return found


HISTORY_SHOWN = 5


def queue_history(*, names, per_queue=HISTORY_SHOWN):
    """{queue name: its latest audit entries (created, changed, disabled, paused, enabled), newest
    first}: how each queue's policy and status came to be what the page shows."""
    history = {name: [] for name in names}
    entries = AuditEntry.objects.filter(target_type="queue", target_id__in=names).order_by("-seq")
    for entry in entries.only("seq", "at", "actor", "action", "target_id", "details")[:2000]:
        shown = history[entry.target_id]
        if len(shown) < per_queue:
            shown.append(entry)
    return history


def queue_relapse(*, history, queue):
    """R11: how `queue` (a Queue) disabled itself again right after someone enabled it, as a
    sentence, from its audit entries (`history`, newest first, as queue_history gives them);
    "" while it is enabled or was disabled otherwise."""
    if queue is None or queue.enabled:
        return ""
    found = relapse(history)
    return relapse_words(found) if found else ""


@dataclass(frozen=True)
class SourceStatus:
    name: str
    kind: str
    kind_title: str  # "NATS JetStream": the kind, for people
    broker_queue: str
    queue: str
    redrive_queue: str | None
    enabled: bool
    # The consumer's state; "not running" when it has not written a heartbeat lately (its
    # process is not started, or died without saying so).
    state: str
    state_since: datetime | None
    last_error: str
    retry_at: datetime | None
    heartbeat_at: datetime | None
    drained: int
    refused: int
    last_drained_at: datetime | None
    # Dead letters waiting on the broker when it last said (None: it has not), and when.
    lag: int | None
    lag_at: datetime | None
    connected_to: str  # where the consumer last connected, no secret; "" before it has
    parking: str  # where refused messages are set aside on the broker; "" when unknown

    def as_dict(self):
        return dict(self.__dict__)


def _parking(source):
    """Where a source's connector parks refusals; "" when its connector cannot be loaded here."""
    try:
        found = connector_loaded(source.kind)
        # The URL stays with the consumer.
        return found.parking_name(source_connector_config(source, url=""))
    except Exception:
        # A kind whose connector is missing, or fails on a row, still leaves the page whole.
        return ""


def source_status_list(*, now=None):
    now = now or timezone.now()
    found = []
    for s in BrokerSource.objects.select_related("queue", "redrive_queue").order_by("name"):
        alive = s.heartbeat_at is not None and now - s.heartbeat_at <= HEARTBEAT_STALE
        state = s.state if alive or s.state == "stopped" else NOT_RUNNING
        if not s.enabled:
            state = "disabled"
        found.append(
            from_row(
                SourceStatus,
                s,
                kind_title=KIND_TITLES.get(s.kind, s.kind),
                queue=s.queue.name,
                redrive_queue=s.redrive_queue.name if s.redrive_queue else None,
                state=state,
                parking=_parking(s),
            )
        )
    return found
