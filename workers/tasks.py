"""Celery tasks: thin. Each fetches what it needs and calls a service; the services hold the
logic and the tests call them directly.

None of these retries on its own: beat enqueues the periodic ones again soon, and the work they
do is idempotent (a run claims only what is due; a sweep recovers a dead run once)."""

from celery import shared_task


@shared_task(soft_time_limit=3300, time_limit=3600, ignore_result=True)
def delivery_run_task(queues=None):
    """One delivery run on the spark worker. Returns the run's id, or None when another run was
    in progress (beat will try again at the next tick)."""
    from console.delivery.services import delivery_run

    run = delivery_run(queues=queues)
    if run is not None:
        from console.lake.services import lake_state_compact_if_due

        lake_state_compact_if_due()
    return run.id if run else None


@shared_task(soft_time_limit=1700, time_limit=1800, ignore_result=True)
def lake_compact_task():
    """Fold event commits into a new state snapshot when enough have piled up."""
    from console.lake.services import lake_state_compact_if_due

    return lake_state_compact_if_due()


@shared_task(soft_time_limit=240, time_limit=300, ignore_result=True)
def sweep_leases_task():
    """R7: recover what dead delivery runs held. Returns how many messages were recovered."""
    from console.delivery.services import leases_sweep

    return leases_sweep()


@shared_task(soft_time_limit=1700, time_limit=1800, ignore_result=True)
def inbox_scan_task():
    """Take the inbox folder's files in. Returns how many files were processed."""
    from console.ingest.services import inbox_scan

    return len(inbox_scan())


@shared_task(soft_time_limit=1700, time_limit=1800, ignore_result=True)
def browse_refresh_task(full=False):
    """Fold the lake's new events into the console's read models, on the spark worker. Returns
    the refresh's id, or None when there was nothing new or another refresh was running (beat
    comes back on its next tick; a lost task only delays the index until then)."""
    from console.browse.services import browse_refresh

    run = browse_refresh(full=full)
    return run.id if run else None


@shared_task(soft_time_limit=3300, time_limit=3600, ignore_result=True)
def action_request_execute_task(request_id):
    """Carry out an approved action request on the spark worker, chunk by chunk. Idempotent: a
    duplicate task finds the request taken (or its chunks committed) and does nothing; a lost
    one is re-enqueued by the decisions sweeper."""
    from console.decisions.execution import action_request_execute

    action_request_execute(request_id=request_id)


@shared_task(soft_time_limit=240, time_limit=300, ignore_result=True)
def decisions_sweep_task():
    """Expire approvals, re-enqueue requests whose task was lost or whose worker died, and
    watch canaries. Returns what it did."""
    from console.decisions.execution import decisions_sweep

    return decisions_sweep()


@shared_task(soft_time_limit=3300, time_limit=3600, ignore_result=True)
def lake_query_task(query_id):
    """Run one lake query on the spark worker. Idempotent: a duplicate task finds the query
    taken or finished and does nothing; a lost one is handed over again by the sweeper. A failed
    query is recorded on its row, not raised. Returns the query's status, or None when it was
    not this task's to run."""
    from console.lakequery.services import lake_query_run

    query = lake_query_run(query_id=query_id)
    return query.status if query else None


@shared_task(soft_time_limit=240, time_limit=300, ignore_result=True)
def lake_queries_sweep_task():
    """Hand lake queries that wait too long or whose worker died to the spark worker again.
    Returns how many were handed over."""
    from console.lakequery.services import lake_queries_sweep

    return len(lake_queries_sweep())
