"""An `engine` fixture: queues, ingest through the real service, delivery runs on the real Spark
session at a time the test chooses, and the resulting state read back from the lake."""

from datetime import UTC, datetime, timedelta

import pytest

from console.browse.selectors import message_detail
from console.delivery.execution import delivery_run
from console.delivery.selectors import message_history
from console.ingest.services import messages_ingest
from console.queues.models import Queue

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


class Engine:
    def __init__(self, spark):
        self.spark = spark
        self.now = T0
        self.runs = []

    def queue(self, name="orders", handler="tests.handlers_for_tests.scripted", **policy):
        queue = Queue(name=name, handler=handler, **policy)
        queue.full_clean()
        queue.save()
        return queue

    def ingest(self, queue, bodies, *, prefix=None, **fields):
        """Ingest {id: body} (or a list of bodies, given ids prefix-0, prefix-1, ...)."""
        if not isinstance(bodies, dict):
            prefix = prefix or queue
            bodies = {f"{prefix}-{i:04d}": b for i, b in enumerate(bodies)}
        records = [
            {"id": mid, "queue": queue, "body": body, **fields} for mid, body in bodies.items()
        ]
        result = messages_ingest(records=records, source="test")
        assert not result.errors, result.errors
        return list(bodies)

    def deliver(self, *, at=None, queues=None, partitions=None):
        if at is not None:
            self.now = at
        run = delivery_run(
            queues=queues, now=self.now, fixed_clock=True, partitions=partitions, spark=self.spark
        )
        self.runs.append(run)
        return run

    def deliver_until_idle(self, *, step=timedelta(days=1), max_runs=40, partitions=None):
        """Run after run, moving the clock on so every waiting message is due, until a run
        finds nothing to do."""
        for _ in range(max_runs):
            run = self.deliver(partitions=partitions)
            self.now += step
            if run.claimed == 0:
                return
        raise AssertionError(f"still busy after {max_runs} runs")

    def later(self, **delta):
        self.now += timedelta(**delta)
        return self.now

    def state(self, message_id):
        return message_detail(message_id=message_id)

    def history(self, message_id):
        return message_history(message_id=message_id)

    def transitions(self, message_id):
        return [(e["from_state"], e["to_state"]) for e in self.history(message_id)]


@pytest.fixture
def delivery_path(request, settings):
    """How runs deliver: "spark" (every run a Spark job), unless a test is parametrized with
    "local" too (runs of at most DELIVERY_LOCAL_MAX due messages without Spark)."""
    path = getattr(request, "param", "spark")
    settings.DELIVERY_LOCAL_MAX = 0 if path == "spark" else 1000
    return path


# The key behaviour tests run on both paths: `pytestmark = both_paths`. The Spark job is a pure
# transform that no database reaches; what the database changes is the console's side of a run
# (claims, leases, the poison list, the audit), the same code on both paths: CI's PostgreSQL run
# takes the local path only.
both_paths = pytest.mark.parametrize(
    "delivery_path",
    [pytest.param("spark", marks=pytest.mark.one_database("sqlite")), "local"],
    indirect=True,
)


@pytest.fixture
def engine(transactional_db, lake_root, spark, delivery_path):
    return Engine(spark)
