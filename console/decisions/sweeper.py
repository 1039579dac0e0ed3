"""What keeps action requests moving when tasks are lost (ARCHITECTURE: correctness never depends
on the broker), and the canary's verdict. Run by the decisions sweep task on the default worker;
whatever it hands to the spark worker goes through the `enqueue` it is given."""

from datetime import timedelta

import pyarrow.compute as pc
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from console.audit.services import audit_record
from console.decisions.execution import action_request_claim_for_execution
from console.decisions.models import ActionChunk
from console.decisions.models import ActionRequest as R
from console.lake.models import LakeCommit
from console.lake.services import lake
from workers.engine import states as S
from workers.jobs import decisions as D


def canary_outcome(request):
    """(verdict, detail) of a request waiting for its canary (workers.jobs.decisions.
    canary_verdict), from the events committed since the canary's."""
    store = lake()
    canary_dir = LakeCommit.objects.get(id=request.canary_commit).path
    reprocessed = store.read_arrow(
        "events",
        [canary_dir],
        columns=["message_id"],
        filter=pc.field("from_state") == S.NDLV,
    ).column("message_id")
    later = LakeCommit.objects.filter(dataset="events", retired=False, id__gt=request.canary_commit)
    paths = list(later.order_by("id").values_list("path", flat=True))
    events = store.read_arrow("events", paths, filter=pc.field("message_id").isin(reprocessed))
    return D.canary_verdict(reprocessed, events)


def canary_check(request, *, enqueue, now=None):
    """Resume a request whose canary passed (handing it to the spark worker again with
    `enqueue(request_id)` once that is committed), stop one whose canary failed (or whose outcome
    did not come within CANARY_TIMEOUT_SECONDS). Returns the verdict."""
    now = now or timezone.now()
    verdict, detail = canary_outcome(request)
    waiting_since = ActionChunk.objects.get(request=request, index=0).committed_at
    timed_out = verdict == D.CANARY_PENDING and (
        (now - waiting_since).total_seconds() > settings.CANARY_TIMEOUT_SECONDS
    )
    if verdict == D.CANARY_PENDING and not timed_out:
        return verdict
    if timed_out:
        verdict = D.CANARY_FAILED
        detail = f"no delivery outcome for the canary within {settings.CANARY_TIMEOUT_SECONDS} s"
    with transaction.atomic():
        if verdict == D.CANARY_PASSED:
            # Back to RUNNING with no worker: the next execute task takes it over.
            won = R.objects.filter(id=request.id, status=R.CANARY).update(
                status=R.RUNNING, canary_result=detail, heartbeat_at=None
            )
        else:
            won = R.objects.filter(id=request.id, status=R.CANARY).update(
                status=R.FAILED,
                canary_result=detail,
                error="the canary failed: the rest of the set was not touched",
                finished_at=now,
            )
        if won != 1:
            return verdict
        audit_record(
            actor="system",
            action=f"execution.canary_{verdict}",
            target_type="request",
            target_id=request.id,
            details={"result": detail},
        )
        if verdict == D.CANARY_PASSED:
            transaction.on_commit(lambda: enqueue(request.id), robust=True)
    return verdict


REENQUEUE_EVERY_SECONDS = 300
_REENQUEUED_KEY = "decisions:reenqueued:{}"


def decisions_sweep(*, enqueue, now=None):
    """What keeps requests moving when tasks are lost (ARCHITECTURE: correctness never depends on
    the broker): expire approvals past their time, hand approved requests that have not started
    and running ones whose worker died to the spark worker again (`enqueue(request_id)`), and
    watch canaries. Returns what it did, by kind."""
    now = now or timezone.now()
    done = {"expired": 0, "enqueued": 0, "canaries": {}}
    for request_id in R.objects.filter(status=R.APPROVED, expires_at__lte=now).values_list(
        "id", flat=True
    ):
        # The claim marks it expired and records it.
        action_request_claim_for_execution(request_id=request_id, now=now)
        done["expired"] += 1
    stale = now - timedelta(seconds=3 * settings.HEARTBEAT_SECONDS)
    waiting = now - timedelta(seconds=settings.SWEEP_INTERVAL_SECONDS)
    lost = R.objects.filter(
        Q(status=R.APPROVED, expires_at__gt=now)
        & (Q(decided_at__lte=waiting) | Q(decided_at__isnull=True, created_at__lte=waiting))
        | Q(status=R.RUNNING) & (Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=stale))
    ).values_list("id", flat=True)
    for request_id in lost:
        # At most once in a while: the task may only be waiting behind a long one.
        if cache.add(_REENQUEUED_KEY.format(request_id), 1, timeout=REENQUEUE_EVERY_SECONDS):
            enqueue(request_id)
            done["enqueued"] += 1
    for request in R.objects.filter(status=R.CANARY):
        done["canaries"][request.id] = canary_check(request, enqueue=enqueue, now=now)
    return done
