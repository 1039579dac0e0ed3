"""Lake queries: create (criteria checked, permission checked, audited) and cancel. Running them
is console.lakequery.execution's, on the spark worker."""

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from console.audit.services import audit_record
from console.lakequery.criteria import criteria_read_bodies, lake_query_criteria_clean
from console.lakequery.models import LakeQuery
from console.lakequery.permissions import may_cancel
from console.lakequery.tasks import lake_query_enqueue
from console.permissions import RUN_QUERIES, VIEW_BODY


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
    with transaction.atomic():
        query = LakeQuery.objects.create(
            requester=actor,
            criteria=clean,
            body_criteria=reads_bodies,
            enqueued_at=timezone.now(),
        )
        audit_record(
            actor=actor,
            action="lake_query.created",
            target_type="lake_query",
            target_id=query.id,
            details=clean,
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
