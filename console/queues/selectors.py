"""Reads of queues' broker sources: what their consumers are doing, for the queues page and the
stats API."""

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from console.queues.models import BrokerSource
from console.queues.sources import HEARTBEAT_STALE
from workers.brokers.base import SourceConfig
from workers.brokers.registry import KIND_TITLES, connector_loaded

NOT_RUNNING = "not running"


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
        return found.parking_name(
            SourceConfig(
                name=source.name,
                kind=source.kind,
                url_env=source.url_env,
                url="",  # the URL stays with the consumer
                drained=source.broker_queue,
                into=source.queue.name,
                prefetch=source.prefetch,
                batch_size=source.batch_size,
                options=dict(source.options or {}),
            )
        )
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
            SourceStatus(
                name=s.name,
                kind=s.kind,
                kind_title=KIND_TITLES.get(s.kind, s.kind),
                broker_queue=s.broker_queue,
                queue=s.queue.name,
                redrive_queue=s.redrive_queue.name if s.redrive_queue else None,
                enabled=s.enabled,
                state=state,
                state_since=s.state_since,
                last_error=s.last_error,
                retry_at=s.retry_at,
                heartbeat_at=s.heartbeat_at,
                drained=s.drained,
                refused=s.refused,
                last_drained_at=s.last_drained_at,
                lag=s.lag,
                lag_at=s.lag_at,
                connected_to=s.connected_to,
                parking=_parking(s),
            )
        )
    return found
