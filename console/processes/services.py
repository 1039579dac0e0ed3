"""Each process's own row (ProcessBeat): made when it starts, beaten while it runs, marked when it
stops cleanly, and forgotten a day after it stopped or went silent."""

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from console.processes.models import CURRENT_MAX, ProcessBeat

# A process that stopped, or went silent, this long ago is no longer listed: its row goes.
KEEP = timedelta(days=1)


def process_beat_start(*, kind, host, pid, now=None):
    """The row of the process `kind` on `host` with `pid`, as it starts: a process that had the
    same host and pid before (a container restarted in its pod is pid 1 again) takes it over."""
    now = now or timezone.now()
    ProcessBeat.objects.update_or_create(
        kind=kind,
        host=host,
        pid=pid,
        defaults={"started_at": now, "beat_at": now, "stopped_at": None, "current": ""},
    )


def process_beat(*, kind, host, pid, started_at, current="", now=None):
    """One heartbeat of the process, with what it works on now. Its row is made again if it went
    (pruned after a day without a beat, or deleted by hand): the process is alive, so listed."""
    now = now or timezone.now()
    current = current[:CURRENT_MAX]
    beaten = ProcessBeat.objects.filter(kind=kind, host=host, pid=pid).update(
        beat_at=now, current=current
    )
    if not beaten:
        ProcessBeat.objects.create(
            kind=kind, host=host, pid=pid, started_at=started_at, beat_at=now, current=current
        )


def process_beat_stop(*, kind, host, pid, now=None):
    """The process stops cleanly: it is listed as stopped, not stale."""
    ProcessBeat.objects.filter(kind=kind, host=host, pid=pid).update(
        stopped_at=now or timezone.now(), current=""
    )


def process_beats_prune(*, now=None):
    """Forget the processes that stopped, or whose last beat came, more than KEEP ago. Returns
    how many went."""
    cutoff = (now or timezone.now()) - KEEP
    gone, _ = ProcessBeat.objects.filter(Q(stopped_at__lt=cutoff) | Q(beat_at__lt=cutoff)).delete()
    return gone
