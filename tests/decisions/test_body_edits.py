"""workers.jobs.decisions.body_edits, without Django or Spark: a JSON Patch (RFC 6902) is checked
before any request exists, applied to a body, its result checked against the message's content
type; a chunk's members are patched into new versions, or fail with a reason that never quotes
their body; a "why" finding about a field gives the patch a bulk edit starts from."""

import hashlib
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from workers.jobs.decisions.body_edits import (
    FAILURE_SCHEMA,
    PatchRefused,
    json_refused,
    patch_apply,
    patch_parse,
    patch_sha256,
    patch_skeleton,
    patched_messages,
)
from workers.lake.schema import MESSAGE_SCHEMA

JSON = "application/json"
ADD_CURRENCY = [{"op": "add", "path": "/currency", "value": "EUR"}]
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _apply(body, patch, content_type=JSON, max_bytes=1000):
    return patch_apply(body, patch, content_type=content_type, max_bytes=max_bytes)


def test_a_patch_is_applied_and_the_body_written_compact_in_utf8():
    patched = _apply('{"order": 7, "note": "café"}'.encode(), ADD_CURRENCY)

    assert patched.body == '{"order":7,"note":"café","currency":"EUR"}'.encode()
    assert (patched.reason, patched.refused) == ("", False)


@pytest.mark.parametrize(
    ("patch", "said"),
    [
        ('{"op": "add"}', "A JSON Patch is a list of operations"),
        ("[]", "A JSON Patch is a list of operations"),
        ("[1]", "Operation 1 is not an object"),
        ('[{"op": "frob", "path": "/a"}]', "Operation 1: op is one of add, remove, replace"),
        ('[{"op": "add", "path": "currency", "value": 1}]', "its path 'currency' is not a JSON"),
        ('[{"op": "remove"}]', "Operation 1 (remove) needs a path."),
        ('[{"op": "test", "path": "/a"}, {"op": "add", "path": "/b"}]', "Operation 1 (test /a)"),
        ('[{"op": "copy", "path": "/b"}]', "Operation 1 (copy) needs a from."),
        ('[{"op": "add", "path": "/a", "value": NaN}]', "NaN is not a JSON value at line 1"),
        ('[{"op": "add", "path": "/a",', "The patch is not valid JSON: Expecting"),
    ],
    ids=[
        "object",
        "empty",
        "number",
        "unknown-op",
        "not-a-pointer",
        "no-path",
        "no-value",
        "no-from",
        "nan",
        "broken",
    ],
)
def test_each_refusal_of_a_patch_says_what_is_wrong_naming_the_operation(patch, said):
    with pytest.raises(PatchRefused) as refused:
        patch_parse(patch)

    assert said in str(refused.value)


def test_a_patch_of_too_many_operations_is_refused_with_the_limit():
    with pytest.raises(PatchRefused, match="at most 1,000 operations"):
        patch_parse([{"op": "remove", "path": f"/f{i}"} for i in range(1001)])


@pytest.mark.parametrize(
    ("body", "patch", "said"),
    [
        (b'{"pin": "4242"}', [{"op": "test", "path": "/pin", "value": "0000"}], "test /pin"),
        (b'{"pin": "4242"}', [{"op": "remove", "path": "/card"}], "remove /card"),
        (b'{"pin": "4242"}', [{"op": "add", "path": "/pin/x", "value": 1}], "add /pin/x"),
        (b'{"pin": "4242"}', [{"op": "move", "from": "/old", "path": "/pin"}], "move /old to"),
        (b"pin 4242 in plain text", ADD_CURRENCY, "the body is not JSON: Expecting value"),
        (b"\xc3\x28 4242", ADD_CURRENCY, "not UTF-8 text"),
    ],
    ids=["test-fails", "missing-member", "inside-a-string", "move-from-nowhere", "text", "bytes"],
)
def test_a_patch_that_does_not_apply_says_where_and_never_quotes_the_body(body, patch, said):
    patched = _apply(body, patch)

    assert patched.body is None and not patched.refused
    assert said in patched.reason
    assert "4242" not in patched.reason


def test_a_result_that_is_not_json_by_its_content_type_is_refused_with_line_and_column():
    # A producer wrote NaN (Python's json.dumps does); the patch leaves it: a strict consumer of
    # application/json refuses the result.
    patched = _apply(b'{"amount": NaN}', ADD_CURRENCY)

    assert patched.body is None and patched.refused
    assert patched.reason == (
        "The message is application/json, and the patched body is not valid JSON: NaN is not a "
        "JSON value at line 1, column 11."
    )
    fixed = _apply(b'{"amount": NaN}', [{"op": "replace", "path": "/amount", "value": 0}])
    assert fixed.body == b'{"amount":0}'


def test_a_message_that_is_not_json_by_its_content_type_keeps_what_python_reads():
    patched = _apply(b'{"amount": Infinity}', ADD_CURRENCY, content_type="text/plain")

    assert patched.body == b'{"amount":Infinity,"currency":"EUR"}'


def test_a_result_over_the_body_limit_is_refused_naming_the_setting():
    patched = _apply(b"{}", [{"op": "add", "path": "/n", "value": "x" * 50}], max_bytes=20)

    assert patched.body is None and patched.refused
    assert "over the limit of 20 bytes (MAX_BODY_BYTES)" in patched.reason


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"a": "NaN and Infinity in a string", "b": [1, -Infinity]}', "-Infinity is not a JSON"),
        ('{"a": "x\\" NaN", "b": Infinity}', "Infinity is not a JSON value at line 1, column 23"),
        ('{\n  "a": 1,\n  "b": }', "Expecting value at line 3, column 8"),
    ],
    ids=["minus-infinity", "escaped-quote", "syntax"],
)
def test_an_edited_json_body_is_read_strictly_and_said_where_it_stops(text, said):
    assert said in json_refused(text.encode(), "application/problem+json")
    assert json_refused(text.encode(), "text/plain") == ""


def _message(message_id, body, *, version=1, content_type=JSON):
    return {
        "message_id": message_id,
        "version": version,
        "queue": "orders",
        "body": body,
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "body_size": len(body),
        "content_type": content_type,
        "headers": '{"x-trace": "t1"}',
        "conversation_id": None,
        "sender": "shop@example.test",
        "enqueued_at": T0,
        "redrive_target": None,
    }


def test_a_chunks_members_become_their_next_versions_or_fail_with_why_in_their_order():
    rows = pa.Table.from_pylist(
        [
            _message("m-1", b'{"order": 1}'),
            _message("m-2", b"not json", content_type="text/plain"),
            _message("m-3", b'{"order": 3}', version=2),
            _message("m-4", b'{"order": 4, "amount": NaN}'),
        ],
        schema=MESSAGE_SCHEMA,
    )

    versions, failures = patched_messages(
        rows, ADD_CURRENCY, max_bytes=1000, redrive_target='{"subject": "orders.retry"}'
    )

    new_one, new_three = b'{"order":1,"currency":"EUR"}', b'{"order":3,"currency":"EUR"}'
    assert versions.to_pylist() == [
        _message("m-1", new_one, version=2) | {"redrive_target": '{"subject": "orders.retry"}'},
        _message("m-3", new_three, version=3) | {"redrive_target": '{"subject": "orders.retry"}'},
    ]
    assert failures.schema == FAILURE_SCHEMA
    assert failures.to_pylist() == [
        {
            "message_id": "m-2",
            "reason": "the body is not JSON: Expecting value at line 1, column 1",
        },
        {
            "message_id": "m-4",
            "reason": "The message is application/json, and the patched body is not valid "
            "JSON: NaN is not a JSON value at line 1, column 21.",
        },
    ]


def test_the_patch_fingerprint_is_the_same_whatever_the_order_of_its_members():
    one = [{"op": "add", "path": "/a", "value": {"x": 1, "y": 2}}]
    other = [{"value": {"y": 2, "x": 1}, "path": "/a", "op": "add"}]

    assert patch_sha256(one) == patch_sha256(other)
    assert patch_sha256(one) != patch_sha256([{"op": "add", "path": "/a", "value": {"x": 2}}])


@pytest.mark.parametrize(
    ("finding", "patch"),
    [
        (
            {"kind": "field", "name": "currency", "value": None, "absent": True},
            [{"op": "add", "path": "/currency", "value": None}],
        ),
        (
            {"kind": "field", "name": "coupon", "value": None, "absent": False},
            [{"op": "remove", "path": "/coupon"}],
        ),
        (
            {"kind": "value", "name": "a/b~c", "value": "x", "absent": False},
            [{"op": "replace", "path": "/a~1b~0c", "value": None}],
        ),
        ({"kind": "header", "name": "x-region", "value": None, "absent": True}, None),
        ({"kind": "header_value", "name": "x-region", "value": "eu", "absent": False}, None),
        ({"kind": "size", "name": "", "value": "2^10", "absent": False}, None),
    ],
    ids=["absent-field", "present-field", "value-escaped", "header", "header-value", "size"],
)
def test_a_finding_about_a_bodys_field_gives_the_patch_a_bulk_edit_starts_from(finding, patch):
    assert patch_skeleton(finding) == patch
    if patch is not None:
        assert patch_parse(patch) == patch
