"""Lake queries: create a search (criteria checked, permission checked, audited) or a "why do
these fail" of a failure group, and cancel. Running them
is console.lakequery.execution's, on the spark worker."""

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from console.audit.services import audit_record
from console.lakequery.criteria import criteria_read_bodies, lake_query_criteria_clean
from console.lakequery.models import LakeQuery
from console.lakequery.permissions import may_cancel
from console.lakequery.tasks import lake_query_enqueue
from console.permissions import RUN_QUERIES, VIEW_BODY, VIEW_GROUPS
from console.readmodels.models import FailureGroup


def lake_query_create(*, actor, criteria):
    """Check and record a query; the spark worker is asked to run it once the transaction
    commits (and the sweeper asks again if that task is lost)."""
    if not actor.has_perm(RUN_QUERIES):
        raise PermissionDenied("you may not run lake queries")
    clean = lake_query_criteria_clean(criteria)
    reads_bodies = criteria_read_bodies(clean)
    if reads_bodies and not actor.has_perm(VIEW_BODY):
        raise PermissionDenied(
            "searching bodies reveals what they hold: it needs the permission to read bodies"
        )
    return _queued(actor, criteria=clean, body_criteria=reads_bodies, audited=clean)


def _queued(actor, *, criteria, body_criteria, audited, kind=LakeQuery.SEARCH):
    """Record the query and its audit entry; the spark worker is asked to run it once the
    transaction commits."""
    with transaction.atomic():
        query = LakeQuery.objects.create(
            kind=kind,
            requester=actor,
            criteria=criteria,
            body_criteria=body_criteria,
            enqueued_at=timezone.now(),
        )
        audit_record(
            actor=actor,
            action="lake_query.created",
            target_type="lake_query",
            target_id=query.id,
            details=audited,
        )
        transaction.on_commit(lambda: lake_query_enqueue(query.id), robust=True)
    return query


def lake_query_cancel(*, actor, query):
    """Stop a query that has not finished. A queued one never runs; a running one's heartbeat
    sees the new status within PROGRESS_SECONDS and cancels its Spark jobs."""
    if not may_cancel(actor, query):
        raise PermissionDenied("only the requester, or someone who may stop any query, cancels it")
    with transaction.atomic():
        won = LakeQuery.objects.filter(
            id=query.id, status__in=[LakeQuery.QUEUED, LakeQuery.RUNNING]
        ).update(status=LakeQuery.CANCELLED, finished_at=timezone.now())
        if won != 1:
            query.refresh_from_db()
            raise ValidationError(f"lake query {query.id} has finished already ({query.status})")
        audit_record(
            actor=actor,
            action="lake_query.cancelled",
            target_type="lake_query",
            target_id=query.id,
        )
    query.refresh_from_db()
    return query


def why_fail_create(*, actor, fingerprint):
    """Ask why a failure group's messages fail: a lake query (the same permissions, audit and
    worker as a search) that compares the group's messages with the deliveries of its queue in
    its period (workers.jobs.failure_traits). It reads bodies, so it needs the permission to
    read them, as a body search does."""
    if not actor.has_perm(RUN_QUERIES):
        raise PermissionDenied("you may not run lake queries")
    if not actor.has_perms([VIEW_BODY, VIEW_GROUPS]):
        raise PermissionDenied(
            "comparing the fields of failed and delivered bodies reveals what they hold: it "
            "needs the permissions to read bodies and failure groups"
        )
    group = FailureGroup.objects.filter(fingerprint=fingerprint).first()
    if group is None:
        raise ValidationError("no such failure group")
    criteria = {
        "group": group.fingerprint,
        "queue": group.queue,
        "since": group.first_seen.isoformat() if group.first_seen else None,
        "until": group.last_seen.isoformat() if group.last_seen else None,
    }
    criteria = {name: value for name, value in criteria.items() if value is not None}
    return _queued(
        actor,
        kind=LakeQuery.WHY,
        criteria=criteria,
        body_criteria=True,
        audited={"kind": LakeQuery.WHY, **criteria},
    )
