"""Reads of lake queries: the ones a user may see, and a finished query's result, read from its
Parquet directory with pyarrow (no Spark on the request path).

The result is sorted by message_id (the job sorts it, and Spark writes the sorted partitions as
files whose names sort the same way), so a page is the rows after a message id: the row groups'
statistics skip what lies before it, and page 1,000 costs what page 1 does."""

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from console.lake.arrow import timestamps_utc
from console.lake.services import lake
from console.lakequery.models import LakeQuery
from console.permissions import VIEW_BODY, VIEW_QUERIES
from workers.lake.schema import QUERY_RESULT_COLUMNS

PAGE_SIZE = 50
PAGE_SIZE_MAX = 500
LIST_SIZE = 50
MAX_ID = 2**63 - 1  # a BigAutoField's largest


def lake_query_visible(*, user):
    """The queries `user` may see: every one with the permission to see queries, except those
    that search bodies for a user who may not read bodies."""
    if not user.has_perm(VIEW_QUERIES):
        return LakeQuery.objects.none()
    qs = LakeQuery.objects.select_related("requester")
    if not user.has_perm(VIEW_BODY):
        qs = qs.filter(body_criteria=False)
    return qs


def lake_query_list(*, user, limit=LIST_SIZE):
    return list(lake_query_visible(user=user).order_by("-id")[:limit])


def lake_query_get(*, query_id):
    """The query, or None (also for a number no id can be: the database would refuse it)."""
    if not 0 < query_id <= MAX_ID:
        return None
    return LakeQuery.objects.select_related("requester").filter(id=query_id).first()


@dataclass
class ResultPage:
    rows: list  # dicts of QUERY_RESULT_COLUMNS
    next_after: str | None  # the message id to pass as `after` for the next page; None at the end


def _files(query):
    """The result's Parquet files, in the order of their rows."""
    root = Path(lake().path(query.result_path))
    if not query.result_path or not root.is_dir():
        return []
    return sorted(str(p) for p in root.glob("*.parquet"))


def lake_query_results(*, query, after=None, limit=PAGE_SIZE):
    """The rows of a finished query's result after message id `after`, at most `limit`."""
    if query.status != LakeQuery.DONE:
        return ResultPage(rows=[], next_after=None)
    wanted = limit + 1  # one more tells whether there is a next page
    filter = pc.field("message_id") > after if after else None
    tables = []
    for path in _files(query):
        dataset = pads.dataset(path, format="parquet")
        # One file at a time, one thread: the rows come in their stored order.
        table = dataset.scanner(
            columns=QUERY_RESULT_COLUMNS, filter=filter, use_threads=False
        ).head(wanted)
        if table.num_rows:
            tables.append(table)
            wanted -= table.num_rows
        if wanted <= 0:
            break
    if not tables:
        return ResultPage(rows=[], next_after=None)
    rows = timestamps_utc(pa.concat_tables(tables, promote_options="permissive")).to_pylist()
    more = len(rows) > limit
    rows = rows[:limit]
    return ResultPage(rows=rows, next_after=rows[-1]["message_id"] if more else None)


def lake_query_result_ids(*, query, batch_size=5000):
    """A finished query's result ids, in order, a list of at most `batch_size` at a time."""
    for path in _files(query):
        dataset = pads.dataset(path, format="parquet")
        scanner = dataset.scanner(columns=["message_id"], batch_size=batch_size, use_threads=False)
        for batch in scanner.to_batches():
            if batch.num_rows:
                yield batch.column(0).to_pylist()


def why_latest(*, user, fingerprint):
    """The newest "why do these fail" query of the group that `user` may see, or None."""
    return (
        lake_query_visible(user=user)
        .filter(kind=LakeQuery.WHY, criteria__group=fingerprint)
        .order_by("-id")
        .first()
    )
