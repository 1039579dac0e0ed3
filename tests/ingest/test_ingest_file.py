import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from console.ingest.services import ingest_file
from tests.ingest.conftest import lake_messages

pytestmark = pytest.mark.django_db


def _jsonl(path, *lines):
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _line(**record):
    return json.dumps(record).encode()


def test_it_reports_a_line_of_invalid_utf8_by_number_and_takes_the_rest(orders, tmp_path):
    path = _jsonl(
        tmp_path / "batch.jsonl",
        *(_line(id=f"m-{i}", queue="orders", body=str(i)) for i in range(1, 7)),
        b'{"id": "m-7", "queue": "orders", "body": "caf\xe9"}',
        _line(id="m-8", queue="orders", body="8"),
    )

    result = ingest_file(path=path, source="test")

    assert (result.accepted, result.refused) == (7, 1)
    assert str(result.errors[0]) == "line 7: not valid UTF-8"
    assert "m-7" not in lake_messages()
    assert "m-8" in lake_messages()


def test_it_reports_bad_json_by_line_and_skips_blank_lines(orders, tmp_path):
    path = _jsonl(
        tmp_path / "batch.jsonl",
        _line(id="m-1", queue="orders", body="1"),
        b"",
        b'{"id": "m-3", ',
        _line(id="m-4", queue="nope", body="4"),
    )

    result = ingest_file(path=path, source="test")

    assert (result.accepted, result.refused) == (1, 2)
    assert [(e.unit, e.position) for e in result.errors] == [("line", 3), ("line", 4)]
    assert result.errors[0].message.startswith("not valid JSON")
    assert str(result.errors[1]) == (
        "line 4 (id m-4): unknown queue 'nope': no queue of that name exists"
    )


def test_it_reads_a_json_document_file(orders, tmp_path):
    path = tmp_path / "batch.json"
    path.write_text(
        json.dumps({"messages": [{"id": "a", "queue": "orders", "body": "1"}, {"id": "b"}]})
    )

    result = ingest_file(path=path, source="test")

    assert (result.accepted, result.refused) == (1, 1)
    assert (result.errors[0].unit, result.errors[0].position) == ("record", 2)


def test_it_reads_a_json_file_holding_one_record_per_line(orders, tmp_path):
    path = _jsonl(
        tmp_path / "batch.json",
        _line(id="a", queue="orders", body="1"),
        _line(id="b", queue="orders", body="2"),
    )

    result = ingest_file(path=path, source="test")

    assert result.accepted == 2


def test_it_keeps_a_parquet_binary_body_byte_exact(orders, tmp_path):
    bodies = [bytes(range(256)), b"", b"\x00\xff\xc3\x28"]
    path = tmp_path / "batch.parquet"
    pq.write_table(
        pa.table(
            {
                "id": ["p-1", "p-2", "p-3"],
                "queue": ["orders"] * 3,
                "body": pa.array(bodies, pa.binary()),
                "headers": pa.array([[("k", "v")], None, []], pa.map_(pa.string(), pa.string())),
            }
        ),
        path,
    )

    result = ingest_file(path=path, source="test")

    assert (result.accepted, result.refused) == (3, 0)
    rows = lake_messages()
    assert [rows[i]["body"] for i in ("p-1", "p-2", "p-3")] == bodies
    assert rows["p-1"]["content_type"] == "application/octet-stream"
    assert json.loads(rows["p-1"]["headers"]) == {"k": "v"}
    assert rows["p-2"]["body_size"] == 0


def test_it_reads_parquet_text_bodies_and_numbers_refused_rows(orders, tmp_path):
    path = tmp_path / "batch.parquet"
    pq.write_table(
        pa.table({"id": ["a", "b"], "queue": ["orders", "gone"], "body": ["x", "y"]}), path
    )

    result = ingest_file(path=path, source="test")

    assert (result.accepted, result.refused) == (1, 1)
    assert str(result.errors[0]).startswith("row 2 (id b): unknown queue")
    assert lake_messages()["a"]["content_type"] == "text/plain"


def test_it_refuses_a_parquet_file_with_columns_that_are_not_message_fields(orders, tmp_path):
    path = tmp_path / "batch.parquet"
    pq.write_table(pa.table({"id": ["a"], "queue": ["orders"], "body": ["x"], "prio": [1]}), path)

    result = ingest_file(path=path, source="test")

    assert (result.accepted, result.refused) == (0, 1)
    assert "prio" in str(result.errors[0])


def test_it_refuses_a_file_that_is_not_parquet(orders, tmp_path):
    path = tmp_path / "batch.parquet"
    path.write_text("not parquet")

    result = ingest_file(path=path, source="test")

    assert result.refused == 1
    assert str(result.errors[0]).startswith("file: not a readable Parquet file")


def test_it_lists_errors_in_line_order(orders, tmp_path):
    path = _jsonl(
        tmp_path / "batch.jsonl",
        _line(id="m-1", queue="orders", body="1"),
        _line(id="m-1", queue="orders", body="other"),
        _line(id="m-3", queue="nope", body="3"),
    )

    result = ingest_file(path=path, source="test")

    assert [e.position for e in result.errors] == [2, 3]
