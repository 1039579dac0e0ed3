"""A bulk reprocess with real processes: the Celery spark worker carrying out a 60k-message
request is SIGKILLed between chunks; the decisions sweeper hands the request to another worker,
which goes on from the first chunk not committed. Every message of the frozen set is decided
exactly once, none outside it, and the audit trail still verifies."""

import time
from collections import Counter
from datetime import timedelta

import pyarrow.compute as pc
import pytest
from django.utils import timezone

from console.audit.models import AuditEntry
from console.audit.selectors import audit_verify
from console.decisions.models import ActionRequest
from console.decisions.scope import frozen_ids
from console.decisions.tasks import decisions_sweep_task
from console.lake.models import LakeCommit
from console.lake.services import lake
from console.readmodels.models import MessageIndex
from tests.decisions.desk import make_desk, quarantine_directly
from tests.delivery.conftest import T0
from tests.processes.conftest import wait_for
from tests.processes.test_spark_worker_killed import WORKER
from workers.celery import app

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# Large enough that the frozen set is written in two parts (50,000 ids a part) and the plan in
# three (25,000 a part), which the chunks cross; the benchmark (bench decisions) has the 100k.
N = 60_000
CHUNKS = 10


def test_a_bulk_reprocess_survives_a_killed_spark_worker_and_decides_each_message_once(
    processes, tmp_path, settings, spark, personas
):
    desk = make_desk(spark, personas, settings)
    settings.HEARTBEAT_SECONDS = 1  # as the workers have it: a dead one is stale in 3 s
    desk.queue("orders")
    desk.queue("payments")
    started = time.perf_counter()
    quarantine_directly("orders", [f"o-{i:06d}" for i in range(N)], at=T0)
    quarantine_directly("payments", [f"p-{i:03d}" for i in range(100)], at=T0)
    assert MessageIndex.objects.filter(state="NDLV").count() == N + 100
    print(f"seeded in {time.perf_counter() - started:.1f} s")
    app.control.purge()

    # Paced at N/10 messages a second, so in ten chunks (a chunk is never more than the rate),
    # so that the kill lands between chunks, not after the last.
    request = desk.request(
        {"kind": "filter", "filters": {"queue": "orders"}}, rate_limit=N // CHUNKS
    )
    assert (request.status, request.count) == ("approved", N)
    first = processes.start(*WORKER, "-n", "spark-first@%h", log=tmp_path / "first.log")
    wait_for(
        lambda: ActionRequest.objects.filter(id=request.id, chunks_done__gte=2).exists(),
        timeout=300,
        what="the first worker to commit two chunks",
    )
    processes.kill(first)
    request.refresh_from_db()
    assert request.status == "running"
    assert 2 <= request.chunks_done < request.chunks_total == CHUNKS

    second = processes.start(*WORKER, "-n", "spark-second@%h", log=tmp_path / "second.log")
    ActionRequest.objects.filter(id=request.id).update(
        heartbeat_at=timezone.now() - timedelta(seconds=10)
    )
    assert decisions_sweep_task()["enqueued"] == 1

    def finished():
        request.refresh_from_db()
        return request.status == "done"

    wait_for(finished, timeout=300, what="the second worker to finish the request")
    processes.kill(second)
    assert (request.done, request.skipped, request.failed, request.chunks_done) == (N, 0, 0, CHUNKS)

    paths = list(LakeCommit.objects.filter(dataset="events").values_list("path", flat=True))
    events = lake().read_arrow("events", paths, columns=["message_id", "run_id", "to_state"])
    decided = events.filter(pc.equal(events.column("run_id"), f"request:{request.id}"))
    per_message = Counter(decided.column("message_id").to_pylist())
    frozen = [m for ids in frozen_ids(request.ids_path) for m in ids]
    assert set(per_message) == set(frozen)  # none outside the frozen set
    assert set(per_message.values()) == {1}  # each exactly once
    assert MessageIndex.objects.filter(queue="orders", state="TBDL").count() == N
    assert MessageIndex.objects.filter(queue="payments", state="NDLV").count() == 100
    actions = list(
        AuditEntry.objects.filter(target_id=str(request.id)).values_list("action", flat=True)
    )
    assert actions[:1] == ["request.created"]
    assert {"execution.started", "execution.resumed", "execution.finished"} <= set(actions)
    assert audit_verify().ok
    started = AuditEntry.objects.get(action="execution.started", target_id=str(request.id))
    print(f"planned in {started.details['plan_seconds']} s")
