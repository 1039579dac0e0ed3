"""Questions other apps ask of the read models, without the Spark job behind them."""

from django.db.models import Q

from console.lake.models import LakeCommit
from console.readmodels.models import MessageIndex, RefreshRun
from workers.engine.states import TBDL, WAIT


def read_models_folded_upto():
    """The last events commit the read models folded (the newest committed refresh's), or None
    when nothing was ever refreshed. The index holds every message that is not DLVD as of it,
    and a decision's commits after it (views_applied) are in it too."""
    run = (
        RefreshRun.objects.filter(status=RefreshRun.COMMITTED).order_by("-id").only("upto_commit")
    ).first()
    return run.upto_commit if run else None


def read_models_due_queues(*, queues, now):
    """Of `queues`, those that may hold a due message (R5: TBDL, or WAIT due by `now`), in the
    order given. Never leaves out a queue that holds one, so a delivery run may be skipped for
    the others (no Spark job when nothing is due):

    - while the lake holds events commits the read models have not folded, any queue may (those
      events may have made anything due: an ingest, a recovery, a run's outcome): all of them;
    - otherwise the index says: it holds every message that is not DLVD as of the refresh's
      cursor, and a decision's commits (views_applied) update it in their own transaction."""
    cursor = read_models_folded_upto()
    unfolded = LakeCommit.objects.filter(dataset="events", views_applied=False)
    if cursor is not None:
        unfolded = unfolded.filter(id__gt=cursor)
    if unfolded.exists():
        return list(queues)
    due = Q(state=TBDL) | Q(state=WAIT, next_attempt_at__lte=now)
    # One indexed probe a queue (ix_queue): a DISTINCT over a million TBDL rows would not be.
    return [q for q in queues if MessageIndex.objects.filter(due, queue=q).exists()]
