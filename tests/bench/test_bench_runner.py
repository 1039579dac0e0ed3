"""The benchmark runner: a table on screen and one JSON file per run."""

import io
import json
import os
from types import SimpleNamespace

from bench.__main__ import run, table


def test_it_writes_every_benchmarks_rows_with_the_core_count(tmp_path):
    rows = [{"case": "orders", "messages": 1000, "seconds": 2.5}]
    modules = {"ingest": SimpleNamespace(run=lambda: rows)}

    path, failures = run(modules, results_dir=tmp_path, out=io.StringIO())

    document = json.loads(path.read_text())
    assert failures == {}
    assert document["machine"]["cpu_count"] == os.cpu_count()
    assert document["results"]["ingest"]["rows"] == rows


def test_a_failing_benchmark_is_reported_and_the_others_still_run(tmp_path):
    def broken():
        raise RuntimeError("no lake")

    modules = {
        "broken": SimpleNamespace(run=broken),
        "fine": SimpleNamespace(run=lambda: [{"case": "a"}]),
    }

    path, failures = run(modules, results_dir=tmp_path, out=io.StringIO())

    assert "RuntimeError: no lake" in failures["broken"]
    document = json.loads(path.read_text())
    assert list(document["results"]) == ["fine"]
    assert "broken" in document["failures"]


def test_the_table_lines_up_columns_and_formats_numbers():
    text = table([{"case": "small", "rate": 1234567.0}, {"case": "large", "n": 10000}])

    assert text.splitlines() == [
        "case   rate       n",
        "-----  ---------  ------",
        "small  1,234,567",
        "large             10,000",
    ]
