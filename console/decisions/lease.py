"""An executing request's lease: its row says which worker holds it and when that worker last
showed it was alive. The lease operations of every kind of run are console.leases; what is the
decisions' own is here: an approval past its expiry never runs, and a request taken over keeps
its start."""

from django.db import transaction
from django.utils import timezone

from console import leases
from console.audit.services import audit_record
from console.decisions.models import ActionRequest as R

LeaseLost = leases.LeaseLost
worker_token = leases.claim_token


def action_request_claim_for_execution(*, request_id, worker="", now=None):
    """Take a request into execution, once: an APPROVED one (an approval past its expiry never
    runs: the request is marked expired instead), or a RUNNING one whose worker's heartbeat
    stopped (it died; its committed chunks stay committed). Returns the request if this caller
    won it, None otherwise."""
    now = now or timezone.now()
    with transaction.atomic():
        expired = R.objects.filter(id=request_id, status=R.APPROVED, expires_at__lte=now).update(
            status=R.EXPIRED, finished_at=now
        )
        if expired:
            audit_record(
                actor="system",
                action="request.expired",
                target_type="request",
                target_id=request_id,
            )
            return None
        won = R.objects.filter(id=request_id, status=R.APPROVED, expires_at__gt=now).update(
            status=R.RUNNING, worker=worker, started_at=now, heartbeat_at=now
        )
        if not won:
            won = R.objects.filter(leases.stale(R, now), id=request_id).update(
                worker=worker, heartbeat_at=now
            )
    return R.objects.get(id=request_id) if won == 1 else None


def lease_heartbeat(request, worker):
    """The started heartbeat of the worker that holds `request`; the caller stops it."""
    heartbeat = leases.Heartbeat(R, request.id, owner=worker)
    heartbeat.start()
    return heartbeat


def lease_hold(request, worker, /, **fields):
    """Write `fields` to the request while `worker` still holds it; LeaseLost otherwise.
    Positional-only: a hand-back writes the row's own `worker` field among `fields`."""
    if R.objects.filter(id=request.id, status=R.RUNNING, worker=worker).update(**fields) != 1:
        raise LeaseLost


def lease_renew(request, worker):
    """The lease checked (and the heartbeat renewed) in the transaction that commits a chunk."""
    if not leases.heartbeat(R, request.id, worker=worker):
        raise LeaseLost


def lease_finish(request, worker, *, status, error=""):
    """Leave RUNNING for good (done, cancelled or failed); False when `worker` no longer held
    the request (nothing written)."""
    return leases.finish(R, request.id, worker=worker, status=status, error=error)


def lease_hand_back(request, worker, **fields):
    """Give the worker back while the request waits (a step's outcome, which the sweeper
    watches and then re-enqueues it): nobody holds it, and no heartbeat is expected."""
    lease_hold(request, worker, worker="", heartbeat_at=None, **fields)
