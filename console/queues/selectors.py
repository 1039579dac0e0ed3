"""Reads of queues' broker sources: what their consumers are doing, for the queues page and the
stats API."""

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from console.queues.models import BrokerSource
from console.queues.sources import HEARTBEAT_STALE

NOT_RUNNING = "not running"


@dataclass(frozen=True)
class SourceStatus:
    name: str
    kind: str
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

    def as_dict(self):
        return dict(self.__dict__)


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
            )
        )
    return found
