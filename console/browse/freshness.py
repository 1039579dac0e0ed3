"""Whether the dashboard's counts lag behind the lake, and why, in words.

The counts (QueueStat) change only when a refresh folds new events into them, so their age alone
says nothing: on a quiet system they are hours old and right. They lag when the lake holds events
commits no refresh has folded; then the refresh runs (console.readmodels.models.RefreshRun) say
the most precise true thing there is: one is running (for how long, its heartbeat), another writer
holds their lock, the last one failed (its error), or none ran (are the workers up?)."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from console.lake.models import LakeCommit
from console.moments import span_text
from console.readmodels.models import RefreshRun
from console.readmodels.selectors import read_models_folded_upto

# The counts are stale when a change has waited this many refresh intervals (at most
# STATS_STALE_SECONDS): a refresh follows each commit and the timer, so one or two intervals are
# ordinary, three are not.
STALE_INTERVALS = 3
# A heartbeat this many beats old: the refresh's worker has likely stopped (the sweeper takes it
# as dead at console.leases.MISSED_BEATS).
SILENT_BEATS = 2
ERROR_SHOWN = 300

NOT_RUN, RUNNING, HELD, FAILED = "not_run", "running", "held", "failed"


@dataclass(frozen=True)
class Staleness:
    reason: str  # NOT_RUN, RUNNING, HELD or FAILED
    waiting_since: datetime  # when the oldest change the counts lack was committed
    text: str


def stale_after_seconds():
    return min(settings.STATS_STALE_SECONDS, STALE_INTERVALS * settings.REFRESH_INTERVAL_SECONDS)


def counts_staleness(*, now):
    """None while the counts have every change older than stale_after_seconds(); otherwise
    why not (Staleness). A few indexed reads, for every poll of the dashboard."""
    folded = read_models_folded_upto()
    # A decision's commits update the counts in their own transaction (views_applied).
    unfolded = LakeCommit.objects.filter(dataset="events", retired=False, views_applied=False)
    if folded is not None:
        unfolded = unfolded.filter(id__gt=folded)
    oldest = unfolded.order_by("id").values_list("created_at", flat=True).first()
    if oldest is None or now - oldest < timedelta(seconds=stale_after_seconds()):
        return None
    waited = span_text(now - oldest)
    lacking = f"The counts lack changes made {waited} ago"
    every = f"a refresh runs every {settings.REFRESH_INTERVAL_SECONDS} s"

    running = RefreshRun.objects.filter(status=RefreshRun.RUNNING).order_by("-id").first()
    if running is not None and running.held_for:
        return Staleness(
            HELD,
            oldest,
            f"{lacking}: {running.held_for} has held the read models for "
            f"{span_text(now - running.started_at)}, and the refresh waits for it.",
        )
    if running is not None:
        silent = now - running.heartbeat_at
        beat = f"its last heartbeat {span_text(silent)} ago"
        if silent > timedelta(seconds=SILENT_BEATS * settings.HEARTBEAT_SECONDS):
            beat += ": has its worker stopped? Is the spark worker running?"
        else:
            beat += " (it is alive: a large batch takes a while)."
        worker = f" on {running.worker}" if running.worker else ""
        return Staleness(
            RUNNING,
            oldest,
            f"{lacking}: a refresh has been running{worker} for "
            f"{span_text(now - running.started_at)}, {beat}",
        )
    last = RefreshRun.objects.order_by("-id").first()
    if last is not None and last.status == RefreshRun.FAILED:
        error = last.error.strip().splitlines()[0] if last.error.strip() else "no error recorded"
        if len(error) > ERROR_SHOWN:
            error = error[: ERROR_SHOWN - 1] + "\u2026"
        failed = span_text(now - (last.finished_at or last.heartbeat_at))
        return Staleness(
            FAILED,
            oldest,
            f"{lacking}: the last refresh failed {failed} ago ({error}); {every}, and the "
            "next tries again.",
        )
    if last is None:
        since = "No refresh has run yet"
    else:
        ended = last.finished_at or last.started_at
        since = f"The last refresh ended {span_text(now - ended)} ago"
    return Staleness(
        NOT_RUN,
        oldest,
        f"{lacking}. {since}; {every}: is the spark worker running?",
    )
