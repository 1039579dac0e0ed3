"""The lake query job (workers.jobs.lake_query) on the hand-written lake of conftest.py: each
criterion alone and together, on the current state and the current body version, for every
message in the lake (not only the indexed ones). No Django: the job takes paths."""

from datetime import datetime

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from tests.lakequery.conftest import H1, MIN, T0
from tests.ledger_rows import naive
from workers.jobs.lake_query import (
    Criteria,
    LakeQueryParams,
    QueryRefused,
    run_lake_query,
)
from workers.lake.schema import QUERY_RESULT_COLUMNS
from workers.lake.store import Lake

pytestmark = pytest.mark.spark


def run(spark, written_lake, tmp_path, **criteria):
    root, written = written_lake
    store = Lake(root)
    out = tmp_path / "result"
    params = LakeQueryParams(
        criteria=Criteria(**criteria),
        snapshot_paths=[store.path(written.snapshot)],
        event_paths=[store.path(written.events)],
        message_paths=store.paths(written.messages),
        out_dir=str(out),
    )
    return run_lake_query(spark, params), out


def ids(spark, out):
    return [r.message_id for r in spark.read.parquet(str(out)).orderBy("message_id").collect()]


@pytest.mark.parametrize(
    ("criteria", "expected"),
    [
        # Body: decoded as UTF-8. c-binary holds the same bytes but is not UTF-8 text.
        ({"body_contains": "payment declined"}, ["b-text", "e-wait"]),
        ({"body_contains": "Payment"}, []),  # case matters
        ({"body_regex": r"declined\s+again$"}, ["e-wait"]),
        ({"body_regex": r"^hello|again$"}, ["b-text", "e-wait"]),
        ({"body_regex": r"\"sku\":\s*\"[A-Z]-\d\""}, ["a-json"]),
        # JSON path: the current body. d-edited's version 1 said id 1; its version 2 says 2.
        ({"json_path": "$.order.id", "json_equals": "2"}, ["d-edited"]),
        ({"json_path": "$.order.id", "json_equals": "1"}, []),
        ({"json_path": "$.order.id", "json_equals": "7"}, ["a-json"]),
        ({"json_path": "$.items[0].sku", "json_equals": "A"}, ["a-json"]),
        ({"body_contains": "fixed by hand"}, ["d-edited"]),
        # Metadata.
        ({"queues": ("payments",)}, ["c-binary", "e-wait"]),
        ({"states": ("NDLV",)}, ["a-json", "c-binary"]),
        ({"states": ("DLVD", "TBDL")}, ["b-text", "d-edited"]),
        ({"sender": "bank@example.test"}, ["b-text", "e-wait"]),
        ({"conversation_id": "c-1"}, ["a-json"]),
        ({"message_id_prefix": "d-"}, ["d-edited"]),
        ({"enqueued_from": T0 + MIN, "enqueued_to": T0 + 3 * MIN}, ["b-text", "c-binary"]),
        ({"enqueued_from": T0 + 4 * MIN}, ["e-wait"]),
        ({"header_name": "trace"}, ["a-json"]),
        ({"header_name": "trace", "header_value": "abc"}, ["a-json"]),
        ({"header_name": "trace", "header_value": "xyz"}, []),
        ({"header_name": "x-tenant", "header_value": "acme"}, ["b-text"]),
        # Together: every criterion must hold.
        ({"queues": ("orders",), "body_contains": "order"}, ["a-json", "d-edited"]),
        ({"states": ("WAIT",), "body_contains": "payment"}, ["e-wait"]),
        ({"sender": "bank@example.test", "body_regex": "hello"}, ["b-text"]),
    ],
    ids=lambda v: str(v) if isinstance(v, dict) else None,
)
def test_each_criterion_finds_exactly_the_messages_it_names(
    spark, written_lake, tmp_path, criteria, expected
):
    result, out = run(spark, written_lake, tmp_path, **criteria)

    assert ids(spark, out) == expected
    assert (result.scanned, result.matched) == (5, len(expected))


def test_a_result_row_holds_the_current_state_and_the_message_as_received(
    spark, written_lake, tmp_path
):
    _, out = run(spark, written_lake, tmp_path, queues=("orders",))

    expected = [
        Row(
            message_id="a-json",
            queue="orders",
            state="NDLV",
            delivery_count=1,
            sender="shop@example.test",
            conversation_id="c-1",
            enqueued_at=naive(T0),
            body_size=59,
            reason="permanent failure",
            updated=naive(H1),
        ),
        Row(
            message_id="b-text",
            queue="orders",
            state="DLVD",
            delivery_count=0,
            sender="bank@example.test",
            conversation_id="c-2",
            enqueued_at=naive(T0 + MIN),
            body_size=29,
            reason="delivered",
            updated=naive(H1),
        ),
        Row(
            message_id="d-edited",
            queue="orders",
            state="TBDL",
            delivery_count=0,
            sender="shop@example.test",
            conversation_id=None,
            enqueued_at=naive(T0 + 3 * MIN),
            body_size=45,  # version 2's
            reason="reprocessed with an edited body",
            updated=naive(H1 + MIN),
        ),
    ]
    result = spark.read.parquet(str(out))
    assert result.columns == QUERY_RESULT_COLUMNS
    assertDataFrameEqual(result, expected, checkRowOrder=False)


def test_the_result_files_hold_the_rows_sorted_by_message_id(spark, written_lake, tmp_path):
    import pyarrow.dataset as pads

    _, out = run(spark, written_lake, tmp_path, message_id_prefix="")  # empty prefix: all
    files = sorted(str(p) for p in out.glob("*.parquet"))
    in_file_order = pads.dataset(files, format="parquet").to_table().column("message_id")

    assert in_file_order.to_pylist() == ["a-json", "b-text", "c-binary", "d-edited", "e-wait"]


def test_bodies_are_read_only_from_the_directories_of_the_candidates(spark, written_lake, tmp_path):
    root, written = written_lake

    result, _ = run(spark, written_lake, tmp_path, message_id_prefix="d-", body_contains="x")

    # d-edited's current body is in the edit's directory; the originals' is never read.
    assert result.body_dirs == [Lake(root).path(written.messages[1])]


def test_a_query_without_body_criteria_reads_no_body(spark, written_lake, tmp_path):
    result, _ = run(spark, written_lake, tmp_path, states=("NDLV",))

    assert result.body_dirs == []


def test_nothing_matching_writes_an_empty_result(spark, written_lake, tmp_path):
    result, out = run(spark, written_lake, tmp_path, queues=("nowhere",))

    assert (result.scanned, result.matched) == (5, 0)
    assert out.is_dir()


def test_a_regular_expression_java_refuses_is_reported_readably(spark, written_lake, tmp_path):
    # Python's named group; Java spells it (?<x>...).
    with pytest.raises(QueryRefused) as caught:
        run(spark, written_lake, tmp_path, body_regex="(?P<x>declined)")

    assert str(caught.value) == (
        "body_regex: Spark refuses this regular expression: Unknown inline modifier near index 2"
    )
    assert not (tmp_path / "result").exists()


def test_a_lake_with_no_commit_yet_finds_nothing(spark, tmp_path):
    params = LakeQueryParams(
        criteria=Criteria(body_contains="x"),
        snapshot_paths=[],
        event_paths=[],
        message_paths=[],
        out_dir=str(tmp_path / "result"),
    )

    result = run_lake_query(spark, params)

    assert (result.scanned, result.matched) == (0, 0)


def test_times_are_compared_as_instants(spark, written_lake, tmp_path):
    from datetime import timedelta, timezone

    paris = timezone(timedelta(hours=1))
    start = datetime(2026, 3, 1, 13, 4, 0, tzinfo=paris)  # 12:04 UTC

    _, out = run(spark, written_lake, tmp_path, enqueued_from=start)

    assert ids(spark, out) == ["e-wait"]
