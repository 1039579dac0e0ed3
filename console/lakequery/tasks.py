"""The lake queries' Celery tasks: thin, each calls console.lakequery.execution."""

from console.celery_task import console_task
from console.lakequery.execution import lake_queries_sweep, lake_query_run


@console_task("workers.tasks.lake_query_task", soft_time_limit=3300, time_limit=3600)
def lake_query_task(query_id):
    """Run one lake query on the spark worker. Idempotent: a duplicate task finds the query
    taken or finished and does nothing; a lost one is handed over again by the sweeper. A failed
    query is recorded on its row, not raised. Returns the query's status, or None when it was
    not this task's to run.

    What stops a long query is LAKE_QUERY_TIMEOUT_SECONDS (at most 3000, under the limits
    here): the spark worker's threads pool enforces no Celery time limit."""
    query = lake_query_run(query_id=query_id)
    return query.status if query else None


@console_task("workers.tasks.lake_queries_sweep_task", soft_time_limit=240, time_limit=300)
def lake_queries_sweep_task():
    """Hand lake queries that wait too long or whose worker died to the spark worker again.
    Returns how many were handed over."""
    return len(lake_queries_sweep(enqueue=lake_query_enqueue))


def lake_query_enqueue(query_id):
    """Hand a query to the spark worker. A lost task is found again by the sweeper."""
    lake_query_task.delay(query_id)
