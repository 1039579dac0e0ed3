"""Issue 43, "Also": a costly lake query cannot hold a worker. A lake query's cost is decided by
the person who asks for it (a regular expression over every body of the lake, say); without a
limit, one that backtracks holds a task slot of the spark worker, and a core, for as long as it
likes (Celery's own time limits do nothing in the worker's threads pool). After
LAKE_QUERY_TIMEOUT_SECONDS its Spark jobs are cancelled, the query fails saying why, on its page
and in the audit trail, and the worker's session runs the next query.

The attack is a real query on the real Spark session: a regular expression that backtracks over
every start of each body (`.*.*.*b` on a body of a's that holds no b), costing about a second a
body here, on SLOW bodies: uncancelled it runs over thirty seconds on two cores, against the
limit of 1 s the test gives it. Each body is in a file of its own, so that a cancelled task stops
at the next body (Spark checks for a kill between the batches it reads, and a batch never spans
files); one body's match is never cut short, as Java's regular expressions do not look for one.
"""

import pytest

from console.audit.models import AuditEntry
from console.lake.services import lake, lake_commit_record
from console.lakequery import execution
from console.lakequery.execution import lake_query_run
from console.lakequery.models import LakeQuery
from console.lakequery.services import lake_query_create
from tests.lakequery.conftest import T0, commit_lake, event, message, write_lake

pytestmark = pytest.mark.spark

SLOW = 60
SLOW_BODY = b"a" * 200 + b"c"
SLOW_REGEX = ".*.*.*b"
TIMEOUT = 1


@pytest.fixture
def slow_lake(transactional_db, lake_root, settings):
    """The lake query tests' five messages, and SLOW more whose bodies the regex is slow on."""
    import pyarrow as pa
    from django.db import transaction

    from workers.lake.schema import MESSAGE_SCHEMA

    settings.REFRESH_ON_COMMIT = False
    ids = [f"slow-{n:03d}" for n in range(SLOW)]
    written = write_lake(
        lake_root,
        extra_events=[
            event(mid, 0, 0, None, "TBDL", at=T0, queue="orders", reason="ingested") for mid in ids
        ],
    )
    commit_lake(written)
    rows = [message(mid, "orders", body=SLOW_BODY, at=T0) for mid in ids]
    store = lake()
    slow = store.write_arrow(
        pa.Table.from_pylist(rows, schema=MESSAGE_SCHEMA),
        store.new_dir("messages", "slow"),
        rows_per_file=1,
    )
    with transaction.atomic():
        lake_commit_record(dataset="messages", path=slow, row_count=SLOW, idempotency_key=slow)
    return lake_root


def test_a_costly_lake_query_is_stopped_at_the_timeout_and_the_next_one_runs(
    slow_lake, personas, spark, settings, monkeypatch, client
):
    settings.LAKE_QUERY_TIMEOUT_SECONDS = TIMEOUT
    # The heartbeat keeps the time: a beat every 0.2 s instead of every 2 s.
    monkeypatch.setattr(execution, "PROGRESS_SECONDS", 0.2)
    operator = personas["operator"]
    query = lake_query_create(actor=operator, criteria={"body_regex": SLOW_REGEX})

    ran = lake_query_run(query_id=query.id, spark=spark)

    assert ran.status == LakeQuery.FAILED
    assert ran.error.startswith(
        "stopped after 1 second: LAKE_QUERY_TIMEOUT_SECONDS, the longest a lake query may run."
    )
    assert (ran.result_path, ran.matched) == ("", 0)
    assert list((slow_lake / "query-results").glob("*/*")) == []
    # The worker's slot is free again before the query would have ended, however busy the
    # machine (no clock here): the timeout fired while Spark worked, and the query's job group
    # holds a job that failed (cancelled), not only jobs that ended well.
    tracker = spark.sparkContext.statusTracker()
    group = f"lake-query-{query.id}-{ran.worker.rsplit(':', 1)[-1]}"
    statuses = {tracker.getJobInfo(job).status for job in tracker.getJobIdsForGroup(group)}
    assert "FAILED" in statuses, statuses
    finished = AuditEntry.objects.get(action="lake_query.finished", target_id=str(query.id))
    assert finished.actor == "system"
    assert finished.details == {"status": "failed", "error": ran.error, "timeout_seconds": 1}

    # Its page says why, and the page where queries are asked for says what the limit is.
    client.force_login(operator)
    page = client.get(f"/lake-queries/{query.id}/")
    assert page.status_code == 200
    assert "stopped after 1 second: LAKE_QUERY_TIMEOUT_SECONDS" in page.content.decode()
    listed = client.get("/lake-queries/").content.decode()
    assert 'for at most <span id="lake-query-timeout">1</span> second (' in listed

    # The same session runs the next query, to its end.
    settings.LAKE_QUERY_TIMEOUT_SECONDS = 600
    following = lake_query_create(actor=operator, criteria={"states": ["NDLV"]})
    done = lake_query_run(query_id=following.id, spark=spark)
    assert done.status == LakeQuery.DONE, done.error
    assert (done.scanned, done.matched) == (5 + SLOW, 2)  # a-json and c-binary
