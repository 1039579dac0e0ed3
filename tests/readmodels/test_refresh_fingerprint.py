"""Failure fingerprints: what the masking hides, and that Spark and plain Python agree."""

import pytest

from workers.jobs.fingerprint import fingerprint, fingerprint_columns, mask, top_frames

STACK = """Traceback (most recent call last):
  File "/srv/app/workers/engine/isolation.py", line 120, in _child
    outcome = call(message)
  File "/srv/app/shop/handlers.py", line 41, in book
    return carrier.book(order)
  File "/srv/app/shop/carrier.py", line 12, in book
    response = http.post(url)
  File "/usr/lib/python3/http.py", line 88, in post
    raise ConnectionError(url)
ConnectionError: https://carrier.example/book
"""


@pytest.mark.parametrize(
    ("message", "masked"),
    [
        ("order 12345 not found", "order <n> not found"),
        ("order 99 not found", "order <n> not found"),
        ("no customer 6f1c2a9e-0b7d-4c11-9a53-3e2f6c9d1b20", "no customer <uuid>"),
        ("object 5f3a9c0e77b1 is locked", "object <hex> is locked"),
        ("the word deadbeefcafe stays", "the word deadbeefcafe stays"),
        ("retry 3 of 12345678", "retry <n> of <n>"),
        ("bad field 'a very long quoted value indeed'", "bad field <str>"),
        ('bad field "short one"', 'bad field "short one"'),
        ("bad field 'id 6f1c2a9e-0b7d-4c11-9a53-3e2f6c9d1b20 x'", "bad field 'id <uuid> x'"),
        ("", ""),
        (None, ""),
    ],
)
def test_masking_hides_ids_numbers_uuids_and_long_quoted_strings(message, masked):
    assert mask(message) == masked


def test_the_top_frames_are_the_three_innermost_as_file_and_function():
    assert top_frames(STACK) == "handlers.py:book; carrier.py:book; http.py:post"
    assert top_frames(None) == ""
    assert top_frames('  File "x.py", line 1, in f\n') == "x.py:f"


def test_failures_that_differ_only_in_numbers_share_a_fingerprint():
    a, pattern, _ = fingerprint("orders", "KeyError", "order 12345 not found", STACK)
    b, _, _ = fingerprint("orders", "KeyError", "order 99 not found", STACK)

    assert a == b
    assert pattern == "order <n> not found"
    assert len(a) == 64


def test_another_exception_type_queue_or_stack_is_another_group():
    base = fingerprint("orders", "KeyError", "order 1 not found", STACK)[0]

    assert fingerprint("orders", "ValueError", "order 1 not found", STACK)[0] != base
    assert fingerprint("payments", "KeyError", "order 1 not found", STACK)[0] != base
    assert fingerprint("orders", "KeyError", "order 1 not found", "")[0] != base


@pytest.mark.spark
def test_spark_computes_the_same_fingerprints_as_python(spark):
    cases = [
        ("orders", "KeyError", "order 12345 not found", STACK),
        ("orders", None, "object 5f3a9c0e77b1 is locked; 'a very long quoted value indeed'", None),
        ("payments", "ValueError", "no customer 6f1c2a9e-0b7d-4c11-9a53-3e2f6c9d1b20", "junk"),
        ("orders", "E", None, '  File "C:\\app\\x.py", line 1, in f\n'),
    ]
    df = spark.createDataFrame(cases, "queue string, exc string, message string, stack string")
    digest, pattern, frames = fingerprint_columns(df.queue, df.exc, df.message, df.stack)

    got = [tuple(r) for r in df.select(digest, pattern, frames).collect()]

    assert got == [fingerprint(*case) for case in cases]
