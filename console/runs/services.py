"""Old runs forgotten: a delivery run starts every few seconds for each queue with due messages,
and a refresh after every commit, so their rows would grow for ever. What they did stays where it
matters (the lake's events, the read models, the audit trail); the rows are only what the Runs
page lists. Compactions keep their own bound (console.lake.execution.COMPACTIONS_KEPT), purges
are kept for good (they are what remains of the purged messages)."""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from console.delivery.models import DeliveryRun
from console.readmodels.models import RefreshRun
from console.runs.totals import delivery_runs_fold


def runs_forget(*, now=None):
    """Delete the delivery runs and refreshes that finished more than RUNS_KEEP_DAYS ago.
    Never one in progress, a dead delivery run whose claims were not recovered yet (R7: the
    sweeper still needs it), nor the newest committed refresh (its position is where the next
    refresh starts). What the delivery runs counted is folded into the metrics' totals first
    (console.runs.totals). Returns {"delivery": n, "refresh": n}."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.RUNS_KEEP_DAYS)
    deliveries = (
        DeliveryRun.objects.filter(finished_at__lt=cutoff)
        .exclude(status=DeliveryRun.RUNNING)
        .exclude(status__in=(DeliveryRun.CRASHED, DeliveryRun.FAILED), recovered=False)
    )
    newest = (
        RefreshRun.objects.filter(status=RefreshRun.COMMITTED)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    refreshes = (
        RefreshRun.objects.filter(finished_at__lt=cutoff)
        .exclude(status=RefreshRun.RUNNING)
        .exclude(id=newest)
    )
    with transaction.atomic():
        delivery_runs_fold(upto=cutoff)
        forgotten = deliveries.delete()[1].get(DeliveryRun._meta.label, 0)
    return {
        "delivery": forgotten,
        "refresh": refreshes.delete()[1].get(RefreshRun._meta.label, 0),
    }
