"""console.browse.headers: stored headers read a member at a time, as json.loads reads them, with
what is shown bounded and what is left out counted."""

import json

import pytest

from console.browse.headers import (
    HEADER_VALUE_SHOWN,
    HeadersUnreadable,
    header_map,
    headers_page,
    headers_shown,
)

# Names and values a scanner of JSON text could get wrong: escaped quotes and backslashes, what
# looks like a separator inside a string, non-ASCII, a lone surrogate, the empty string.
TRICKY = {
    'k"\\,': 'v", "x": "',
    "é😀": "\ud800",
    "": "",
    "x-death": '[{"count": 1, "reason": "rejected"}]',
}


@pytest.mark.parametrize(
    "dumps",
    [json.dumps, lambda h: json.dumps(h, ensure_ascii=False, indent=2, separators=(" ,", " : "))],
    ids=["as ingest stores them", "spaced and unescaped"],
)
def test_it_reads_what_json_loads_reads(dumps):
    text = dumps(TRICKY)

    assert header_map(text) == json.loads(text)
    assert headers_page(text, limit=10).headers == json.loads(text)
    shown = headers_shown(text)
    assert [(r.name, r.value) for r in shown.rows] == sorted(TRICKY.items())
    assert (shown.count, shown.more, shown.complete) == (4, 0, True)


def test_it_shows_the_first_headers_cut_and_counts_the_rest():
    headers = {f"h{i:03d}": "v" * 10 for i in range(300)}
    headers["h000"] = "é" * (HEADER_VALUE_SHOWN + 5)

    shown = headers_shown(json.dumps(headers), most=100)

    assert [r.name for r in shown.rows] == [f"h{i:03d}" for i in range(100)]
    assert (shown.rows[0].value, shown.rows[0].value_cut) == ("é" * HEADER_VALUE_SHOWN, 10)
    assert (shown.count, shown.more, shown.more_bytes) == (300, 200, 200 * (4 + 10))
    assert (shown.cut, shown.complete) == (["h000"], False)


def test_a_page_stops_at_its_limit_and_says_where_the_next_begins():
    headers = {f"h{i}": str(i) for i in range(5)}

    first = headers_page(json.dumps(headers), offset=0, limit=2)
    last = headers_page(json.dumps(headers), offset=4, limit=2)

    assert (first.headers, first.count, first.next) == ({"h0": "0", "h1": "1"}, 5, 2)
    assert (last.headers, last.next) == ({"h4": "4"}, None)


def test_text_that_is_not_an_object_shows_what_was_read_and_says_so():
    shown = headers_shown('{"a": "b", "c"')

    assert ([(r.name, r.value) for r in shown.rows], shown.unreadable) == ([("a", "b")], True)
    assert header_map("[1, 2]") == {}
    with pytest.raises(HeadersUnreadable):
        headers_page('{"a": "b" "c": "d"}')
