"""A line diff of two versions of a body: pretty-printed first, bounded, binary told apart."""

from console.browse.body import BODY_SHOWN_BYTES, DIFF_LINES_SHOWN, body_diff


def test_a_json_edit_inside_one_line_shows_as_the_lines_it_changed():
    diff = body_diff(b'{"order": 7, "customer": null}', b'{"order": 7, "customer": "ACME"}')
    assert not diff.binary and not diff.identical and not diff.truncated
    changed = [(kind, text) for kind, text in diff.lines if kind in ("added", "removed")]
    assert changed == [("removed", '  "customer": null'), ("added", '  "customer": "ACME"')]
    assert ("same", '  "order": 7,') in diff.lines
    assert diff.lines[0][0] == "hunk"


def test_the_same_bytes_are_identical_and_binary_bodies_have_no_line_diff():
    assert body_diff(b"abc", b"abc").identical
    binary = body_diff(b"text", b"\x00\x01\x02")
    assert binary.binary and not binary.identical and binary.lines == ()


def test_a_large_diff_is_cut_and_a_large_body_compared_by_its_start():
    before = "\n".join(f"line {i}" for i in range(DIFF_LINES_SHOWN * 2)).encode()
    after = "\n".join(f"LINE {i}" for i in range(DIFF_LINES_SHOWN * 2)).encode()
    cut = body_diff(before, after)
    assert cut.truncated and len(cut.lines) == DIFF_LINES_SHOWN
    big = b"a\n" * BODY_SHOWN_BYTES
    partial = body_diff(big, big + b"b\n")
    assert partial.partial
