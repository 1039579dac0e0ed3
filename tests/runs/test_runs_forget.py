"""Old delivery runs and refreshes are forgotten after RUNS_KEEP_DAYS; what the sweeper or the
next refresh still needs is kept."""

from datetime import timedelta

from console.delivery.models import DeliveryRun
from console.readmodels.models import RefreshRun
from console.runs.services import runs_forget


def test_finished_runs_older_than_the_keep_days_go_and_the_rest_stay(runs, settings):
    settings.RUNS_KEEP_DAYS = 30
    old, recent = timedelta(days=31), timedelta(days=29)
    gone = [
        runs.delivery(ago=old, status="committed"),
        runs.delivery(ago=old, status="crashed", recovered=True),
        runs.refresh(ago=old + timedelta(hours=1), upto_commit=3),
        runs.refresh(ago=old, status="failed"),
    ]
    kept = [
        # The sweeper has yet to give back what it held (R7).
        runs.delivery(ago=old, status="crashed", recovered=False),
        runs.delivery(ago=old, status="running", beat=old),
        runs.delivery(ago=recent, status="committed"),
        runs.refresh(ago=recent, status="failed"),
    ]
    # The newest committed refresh is where the next one starts, however old it is.
    newest = runs.refresh(ago=old, upto_commit=9)

    assert runs_forget() == {"delivery": 2, "refresh": 2}

    left = keys([*DeliveryRun.objects.all(), *RefreshRun.objects.all()])
    assert left == keys([*kept, newest])
    assert not keys(gone) & left


def keys(rows):
    return {(type(r).__name__, r.id) for r in rows}
