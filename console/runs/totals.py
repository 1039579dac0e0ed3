"""What every delivery run that left RUNNING counted, for the metrics' counters: runs by status,
messages by the state a committed run left them in, and the runs' durations.

A sum over the rows would go down when old runs are forgotten, and would read a month of rows on
every scrape. So the runs that finished before a point are folded into RunTotal, and a read adds
the runs finished since. The point moves on at most every FOLD_STEP, and never closer to now than
FOLD_MARGIN: a run's finished_at is written as it leaves RUNNING, and its transaction commits a
little later, so a run folded too soon could still be invisible and never be counted."""

from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.db.models import BigIntegerField, Count, DurationField, ExpressionWrapper, F, Q, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils import timezone
from prometheus_client.utils import floatToGoString

from console.delivery.models import DeliveryRun
from console.runs.models import RunFold, RunTotal
from workers.engine.states import STATES
from workers.engine.timings import HANDLER_BUCKETS

FOLD_MARGIN = timedelta(hours=1)
FOLD_STEP = timedelta(minutes=10)
# Upper bounds of the duration histogram's buckets, in seconds: a trickle's run without Spark
# takes about a second, a Spark job's some seconds, a million messages' minutes.
DURATION_BUCKETS = (1, 2.5, 5, 10, 30, 60, 300, 900, 3600)

# The totals' names (RunTotal.metric), and what their label holds.
RUNS = "runs"  # label: the status it left RUNNING with
OUTCOMES = "outcomes"  # label: a state a committed run left messages in
DURATION_LE = "duration_le"  # label: a bucket's upper bound; runs that took at most that long
DURATION_COUNT = "duration_count"
DURATION_SUM = "duration_sum"  # seconds
# How long handlers took (workers.engine.timings), per queue.
HANDLER_LE = "handler_le"  # label: "<queue> <bucket's upper bound>"; calls that took at most that
HANDLER_COUNT = "handler_count"  # label: the queue
HANDLER_SUM = "handler_sum"  # label: the queue; seconds

_BEGINNING = datetime(1970, 1, 1, tzinfo=UTC)


def bucket_label(seconds):
    """A bucket's upper bound as its `le` label and RunTotal.label write it."""
    return floatToGoString(seconds)


def handler_label(queue, le):
    """HANDLER_LE's label: queue names have no space (workers.engine.policy)."""
    return f"{queue} {le}"


def _tally(runs):
    """{(metric, label): value} over the finished runs of `runs`."""
    runs = runs.exclude(status=DeliveryRun.RUNNING).exclude(finished_at=None).order_by()
    totals = {}
    _tally_handler_times(runs, totals)
    for status, n in runs.values_list("status").annotate(n=Count("id")):
        totals[(RUNS, status)] = n
    sums = runs.filter(status=DeliveryRun.COMMITTED).aggregate(
        **{
            state: Sum(Cast(KT(f"outcomes__states__{state}"), BigIntegerField()))
            for state in STATES
        }
    )
    for state, n in sums.items():
        if n:
            totals[(OUTCOMES, state)] = n
    took = runs.annotate(
        took=ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
    )
    durations = took.aggregate(
        count=Count("id"),
        sum=Sum("took"),
        **{
            f"le{i}": Count("id", filter=Q(took__lte=timedelta(seconds=bound)))
            for i, bound in enumerate(DURATION_BUCKETS)
        },
    )
    if durations["count"]:
        totals[(DURATION_COUNT, "")] = durations["count"]
        totals[(DURATION_SUM, "")] = durations["sum"].total_seconds()
        for i, bound in enumerate(DURATION_BUCKETS):
            totals[(DURATION_LE, bucket_label(bound))] = durations[f"le{i}"]
    return totals


def _tally_handler_times(runs, totals):
    """Add the handlers' times the committed runs of `runs` kept (per queue, a count per
    workers.engine.timings slot) to `totals`, as a Prometheus histogram counts: cumulative."""
    kept = runs.filter(status=DeliveryRun.COMMITTED, outcomes__has_key="handler_seconds")
    for per_queue in kept.values_list("outcomes__handler_seconds", flat=True):
        for queue, held in (per_queue or {}).items():
            counts = held["counts"]
            cumulative = 0
            for bound, n in zip(HANDLER_BUCKETS, counts, strict=False):
                cumulative += n
                key = (HANDLER_LE, handler_label(queue, bucket_label(bound)))
                totals[key] = totals.get(key, 0) + cumulative
            totals[(HANDLER_COUNT, queue)] = totals.get((HANDLER_COUNT, queue), 0) + sum(counts)
            totals[(HANDLER_SUM, queue)] = totals.get((HANDLER_SUM, queue), 0) + held["sum"]


def _fold_held():
    """The fold's row, locked until the caller's transaction ends: one folder or reader at a
    time, so a read never sees the totals of one fold with the rows of another."""
    RunFold.objects.get_or_create(name=RunFold.DELIVERY, defaults={"upto": _BEGINNING})
    return RunFold.objects.select_for_update().get(name=RunFold.DELIVERY)


def _fold(fold, upto):
    """Add the runs that finished in [fold.upto, upto) to the totals; in the caller's transaction,
    with the fold held."""
    if upto <= fold.upto:
        return
    folded = _tally(DeliveryRun.objects.filter(finished_at__gte=fold.upto, finished_at__lt=upto))
    for (metric, label), value in folded.items():
        total, _ = RunTotal.objects.get_or_create(metric=metric, label=label)
        RunTotal.objects.filter(id=total.id).update(value=F("value") + value)
    RunFold.objects.filter(name=fold.name).update(upto=upto)
    fold.upto = upto


def delivery_runs_fold(*, upto):
    """Fold the delivery runs that finished before `upto` (runs_forget, before it deletes them)."""
    with transaction.atomic():
        _fold(_fold_held(), upto)


def delivery_run_totals(*, now=None):
    """{(metric, label): value} over every delivery run that ever left RUNNING, forgotten or not;
    each value only ever grows. Folds first when the fold is due."""
    now = now or timezone.now()
    with transaction.atomic():
        fold = _fold_held()
        horizon = now - FOLD_MARGIN
        if horizon - fold.upto >= FOLD_STEP:
            _fold(fold, horizon)
        totals = {(t.metric, t.label): t.value for t in RunTotal.objects.all()}
        recent = _tally(DeliveryRun.objects.filter(finished_at__gte=fold.upto))
    for key, value in recent.items():
        totals[key] = totals.get(key, 0) + value
    return totals
