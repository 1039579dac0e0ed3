"""What keeps action requests moving when tasks are lost (ARCHITECTURE: correctness never depends
on the broker), and the verdict on each step of a progressive redrive (a canary is its one
step). Run by the decisions sweep task on the default worker; whatever it hands to the spark
worker goes through the `enqueue` it is given. And break-glass decisions whose review is overdue
(R17), found by a task of their own."""

from datetime import timedelta

import pyarrow.compute as pc
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from console import leases
from console.audit.services import audit_record
from console.decisions.execution import action_request_claim_for_execution
from console.decisions.models import ActionChunk
from console.decisions.models import ActionRequest as R
from console.lake.models import LakeCommit
from console.lake.services import lake
from workers.engine import states as S
from workers.jobs import decisions as D


def step_outcome(request):
    """What became of the watched step's messages (workers.jobs.decisions.step_outcome), from
    the events committed since the step's."""
    store = lake()
    step_dir = LakeCommit.objects.get(id=request.canary_commit).path
    reprocessed = store.read_arrow(
        "events",
        [step_dir],
        columns=["message_id"],
        filter=pc.field("from_state") == S.NDLV,
    ).column("message_id")
    later = LakeCommit.objects.filter(dataset="events", retired=False, id__gt=request.canary_commit)
    paths = list(later.order_by("id").values_list("path", flat=True))
    events = store.read_arrow("events", paths, filter=pc.field("message_id").isin(reprocessed))
    return D.step_outcome(reprocessed, events)


def _step_result(chunk, outcome, verdict):
    return {
        "step": chunk.index + 1,
        "size": outcome.size,
        "delivered": outcome.delivered,
        "refailed": outcome.refailed,
        "pending": outcome.pending,
        "rate": round(outcome.rate, 2),
        "verdict": verdict,
        "reasons": outcome.reasons,
    }


def step_check(request, *, enqueue, now=None):
    """Resume a request whose watched step passed (handing it to the spark worker again with
    `enqueue(request_id)` once that is committed: the next step, or the rest), stop one whose
    step failed (over its re-failure threshold, or no outcome within CANARY_TIMEOUT_SECONDS),
    leaving the rest of its set untouched. While the step is pending its counts are kept up to
    date for the request page. Returns the verdict."""
    now = now or timezone.now()
    chunk = ActionChunk.objects.get(request=request, events_commit=request.canary_commit)
    outcome = step_outcome(request)
    threshold = request.refailure_threshold
    verdict = outcome.verdict(threshold)
    steps = len(request.steps)
    detail = D.step_detail(outcome, verdict, step=chunk.index + 1, steps=steps, threshold=threshold)
    timed_out = verdict == D.STEP_PENDING and (
        (now - chunk.committed_at).total_seconds() > settings.CANARY_TIMEOUT_SECONDS
    )
    if timed_out:
        verdict = D.STEP_FAILED
        said = "the canary" if steps == 1 else f"step {chunk.index + 1} of {steps}"
        detail = (
            f"no delivery outcome for {said} within {settings.CANARY_TIMEOUT_SECONDS} s ({detail})"
        )
    result = _step_result(chunk, outcome, verdict)
    results = list(request.step_results)
    results.extend({} for _ in range(chunk.index + 1 - len(results)))
    results[chunk.index] = result
    watching = R.objects.filter(id=request.id, status=R.CANARY, canary_commit=request.canary_commit)
    if verdict == D.STEP_PENDING:
        if request.step_results != results:
            watching.update(step_results=results, canary_result=detail)
        return verdict
    with transaction.atomic():
        if verdict == D.STEP_PASSED:
            # Back to RUNNING with no worker: the next execute task takes it over.
            won = watching.update(
                status=R.RUNNING, canary_result=detail, step_results=results, heartbeat_at=None
            )
        else:
            untouched = request.count - request.done - request.skipped - request.failed
            won = watching.update(
                status=R.FAILED,
                canary_result=detail,
                step_results=results,
                error=(
                    f"stopped: {detail}. The rest of the set ({untouched} message(s)) was not "
                    "touched."
                ),
                finished_at=now,
            )
        if won != 1:
            return verdict
        audit_record(
            actor="system",
            action=f"execution.step_{verdict}",
            target_type="request",
            target_id=request.id,
            details={
                **result,
                "steps": steps,
                "refailure_threshold": threshold,
                "timed_out": timed_out,
                "result": detail,
            },
        )
        if verdict == D.STEP_PASSED:
            transaction.on_commit(lambda: enqueue(request.id), robust=True)
    return verdict


REENQUEUE_EVERY_SECONDS = 300
_REENQUEUED_KEY = "decisions:reenqueued:{}"


def decisions_sweep(*, enqueue, now=None):
    """What keeps requests moving when tasks are lost (ARCHITECTURE: correctness never depends on
    the broker): expire approvals past their time, hand approved requests that have not started
    and running ones whose worker died to the spark worker again (`enqueue(request_id)`), and
    watch the steps of progressive redrives (canaries: "canaries" in what it returns). Returns
    what it did, by kind."""
    now = now or timezone.now()
    done = {"expired": 0, "enqueued": 0, "canaries": {}}
    for request_id in R.objects.filter(status=R.APPROVED, expires_at__lte=now).values_list(
        "id", flat=True
    ):
        # The claim marks it expired and records it.
        action_request_claim_for_execution(request_id=request_id, now=now)
        done["expired"] += 1
    waiting = now - timedelta(seconds=settings.SWEEP_INTERVAL_SECONDS)
    lost = R.objects.filter(
        Q(status=R.APPROVED, expires_at__gt=now)
        & (Q(decided_at__lte=waiting) | Q(decided_at__isnull=True, created_at__lte=waiting))
        | leases.stale(R, now)
    ).values_list("id", flat=True)
    for request_id in lost:
        # At most once in a while: the task may only be waiting behind a long one.
        if cache.add(_REENQUEUED_KEY.format(request_id), 1, timeout=REENQUEUE_EVERY_SECONDS):
            enqueue(request_id)
            done["enqueued"] += 1
    for request in R.objects.filter(status=R.CANARY):
        done["canaries"][request.id] = step_check(request, enqueue=enqueue, now=now)
    return done


def break_glass_overdue_sweep(*, now=None):
    """Break-glass decisions (R17) whose review is past due at `now` and not reviewed: each is
    marked alerted with a conditional update (two sweeps at once alert it once) and recorded in
    the audit trail as "request.break_glass_review_overdue", whose receiver raises the alert
    (console.alerts). Once per decision, however often it runs. Returns the requests' ids."""
    now = now or timezone.now()
    overdue = R.objects.filter(
        break_glass_at__isnull=False,
        reviewed_at__isnull=True,
        review_overdue_alerted_at__isnull=True,
        review_due_at__lte=now,
    ).values_list("id", "review_due_at")
    alerted = []
    for request_id, due in overdue:
        with transaction.atomic():
            won = R.objects.filter(
                id=request_id, reviewed_at__isnull=True, review_overdue_alerted_at__isnull=True
            ).update(review_overdue_alerted_at=now)
            if won != 1:
                continue  # reviewed, or alerted by another sweep, in between
            audit_record(
                actor="system",
                action="request.break_glass_review_overdue",
                target_type="request",
                target_id=request_id,
                details={"review_due_at": due, "at": now},
            )
        alerted.append(request_id)
    return alerted
