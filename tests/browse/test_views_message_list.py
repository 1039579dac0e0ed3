"""The quarantine browser: filters, sorting, keyset pagination and "select all N matching"."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from console.browse import selectors
from console.browse.selectors import BadCursor, message_match_count, message_page
from tests.browse.conftest import T0, login
from tests.browse.listing_order import order_by_hand, pages_walked, rows_with_ties

SORTS = [
    "-last_failure",
    "last_failure",
    "-enqueued",
    "enqueued",
    "-delivery_count",
    "delivery_count",
    "queue",
    "-queue",
]


@pytest.fixture
def many(index):
    """130 rows: failure times with many ties, some never failed (no last_failure_at)."""
    return rows_with_ties(index, 130, never_failed_every=10, enqueued_hours=7, attempts=5)


@pytest.mark.parametrize("sort", SORTS)
def test_pages_follow_each_other_without_overlap_or_gap_under_ties(many, sort):
    from console.readmodels.models import MessageIndex

    ids, pages = pages_walked({}, sort, 50)

    assert ids == order_by_hand(list(MessageIndex.objects.all()), sort)
    assert len(ids) == len(set(ids)) == 130
    assert pages == 3


@pytest.mark.parametrize("sort", ["-last_failure", "last_failure", "delivery_count"])
def test_previous_links_walk_back_the_same_pages(many, sort):
    forward = []
    page = message_page(filters={}, sort=sort, size=20)
    while True:
        forward.append([r.message_id for r in page.rows])
        if not page.next_cursor:
            break
        page = message_page(filters={}, sort=sort, after=page.next_cursor, size=20)

    backward = [[r.message_id for r in page.rows]]
    while page.prev_cursor:
        page = message_page(filters={}, sort=sort, before=page.prev_cursor, size=20)
        backward.append([r.message_id for r in page.rows])

    assert backward[::-1] == forward


def test_a_page_is_one_or_two_bounded_queries_never_an_offset(many):
    first = message_page(filters={}, size=50)
    with CaptureQueriesContext(connection) as queries:
        message_page(filters={"queue": "orders"}, after=first.next_cursor, size=50)

    sql = " ".join(q["sql"] for q in queries.captured_queries).upper()
    assert "OFFSET" not in sql
    assert "LIMIT" in sql
    assert len(queries.captured_queries) <= 2


def test_a_tampered_or_foreign_cursor_is_refused(many):
    page = message_page(filters={}, size=10)

    with pytest.raises(BadCursor):
        message_page(filters={}, after=page.next_cursor[:-2] + "xx")
    with pytest.raises(BadCursor):
        message_page(filters={}, sort="enqueued", after=page.next_cursor)


def test_the_page_links_keep_filters_and_lead_to_the_next_page(many, personas):
    client = login(personas["viewer"])
    params = {"candidate": "no", "sort": "-enqueued"}
    first = client.get(reverse("message-list"), params)
    html = first.content.decode()
    assert 'id="page-next"' in html and 'id="page-prev"' not in html
    link = re.search(r'id="page-next" rel="next" href="([^"]+)"', html).group(1)
    link = link.replace("&amp;", "&")
    assert "candidate=no" in link and "sort=-enqueued" in link

    second = client.get(reverse("message-list") + link)

    one = [r.message_id for r in first.context["page"].rows]
    two = [r.message_id for r in second.context["page"].rows]
    assert len(one) == len(two) == 50
    assert not set(one) & set(two)
    assert 'id="page-prev"' in second.content.decode()


def _link(html, name):
    return re.search(rf'id="{name}" rel="\w+" href="([^"]+)"', html).group(1).replace("&amp;", "&")


def test_each_page_says_which_rows_of_how_many_it_shows(many, personas):
    client = login(personas["viewer"])
    url = reverse("message-list")

    first = client.get(url, {"size": "25"}).content.decode()
    second = client.get(url + _link(first, "page-next")).content.decode()
    third = client.get(url + _link(second, "page-next")).content.decode()
    back = client.get(url + _link(third, "page-prev")).content.decode()

    assert "1&ndash;25 of 130" in first
    assert "26&ndash;50 of 130" in second and "size=25" in _link(second, "page-next")
    assert "51&ndash;75 of 130" in third
    assert "26&ndash;50 of 130" in back
    last = client.get(url, {"size": "100"}).content.decode()
    assert "101&ndash;130 of 130" in client.get(url + _link(last, "page-next")).content.decode()


def test_a_page_size_that_is_not_offered_is_refused(many, personas):
    response = login(personas["viewer"]).get(reverse("message-list"), {"size": "100000"})

    assert response.status_code == 400
    assert "not one of the available choices" in response.content.decode()


def test_a_header_sorts_by_its_column_and_a_second_click_flips_it(many, personas):
    client = login(personas["viewer"])
    url = reverse("message-list")

    html = client.get(url, {"queue": "orders"}).content.decode()
    sorted_by = r'<th aria-sort="descending"><a class="sort" href="([^"]+)">([^<]+)</a>'
    header = re.search(sorted_by, html)
    assert header.group(2).startswith("last failure")  # the default sort, newest first
    attempts = re.search(r'<a class="sort" href="([^"]+)">attempts</a>', html).group(1)
    attempts = attempts.replace("&amp;", "&")
    assert "queue=orders" in attempts and "sort=-delivery_count" in attempts

    by_attempts = client.get(url + attempts)
    counts = [r.delivery_count for r in by_attempts.context["page"].rows]
    assert counts == sorted(counts, reverse=True)
    flip = re.search(
        r'<th aria-sort="descending"><a class="sort" href="([^"]+)">attempts',
        by_attempts.content.decode(),
    ).group(1)
    assert "sort=delivery_count" in flip.replace("&amp;", "&")
    assert "sort=-delivery_count" not in flip.replace("&amp;", "&")


def test_a_bad_cursor_on_the_page_shows_the_first_page_and_says_why(many, personas):
    response = login(personas["viewer"]).get(reverse("message-list"), {"after": "forged"})

    assert response.status_code == 200
    assert "not valid" in response.content.decode()
    assert len(response.context["page"].rows) == 50


VARIED_COLUMNS = (
    "message_id",
    "queue",
    "state",
    "group_id",
    "exception_type",
    "sender",
    "conversation_id",
    "candidate",
    "reason",
    "hours_after_t0",
)
VARIED = [
    ("a", "orders", "NDLV", "g1", "KeyError", "s1@x", "c1", True, "no key 'sku'", 0),
    ("b", "payments", "WAIT", "g2", "ValueError", "s2@x", "c2", False, "bad currency XYZ", 2),
    ("c", "orders", "FAIL", "g1", "KeyError", "s1@x", "c1", False, "No KEY 'id'", 4),
]


@pytest.fixture
def varied(index):
    for values in VARIED:
        fields = dict(zip(VARIED_COLUMNS, values, strict=True))
        hours = fields.pop("hours_after_t0")
        index.row(**fields, last_failure_at=T0 + timedelta(hours=hours))
    index.row("d", queue="orders", state="TBDL", last_failure_at=None, reason="")


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, {"a", "b", "c", "d"}),
        ({"queue": "orders"}, {"a", "c", "d"}),
        ({"state": "WAIT"}, {"b"}),
        ({"group": "g1"}, {"a", "c"}),
        ({"exception_type": "ValueError"}, {"b"}),
        ({"since": "2026-03-01T13:00"}, {"b", "c"}),
        ({"until": "2026-03-01T13:00"}, {"a"}),
        ({"since": "2026-03-01T11:00", "until": "2026-03-01T15:00"}, {"a", "b"}),
        ({"sender": "s1@x"}, {"a", "c"}),
        ({"conversation": "c2"}, {"b"}),
        ({"candidate": "yes"}, {"a"}),
        ({"candidate": "no"}, {"b", "c", "d"}),
        ({"q": "key"}, {"a", "c"}),
        ({"queue": "orders", "q": "sku"}, {"a"}),
    ],
)
def test_each_filter_narrows_the_list(varied, personas, params, expected):
    response = login(personas["viewer"]).get(reverse("message-list"), params)

    assert response.status_code == 200
    assert {r.message_id for r in response.context["page"].rows} == expected


def test_an_invalid_filter_is_said_and_the_list_shows_without_it(varied, personas):
    response = login(personas["viewer"]).get(reverse("message-list"), {"state": "NOPE"})

    assert response.status_code == 400
    assert "Not understood: state" in response.content.decode()
    assert {r.message_id for r in response.context["page"].rows} == {"a", "b", "c", "d"}


def test_the_matching_count_is_capped_instead_of_counting_everything(many, personas, monkeypatch):
    monkeypatch.setattr(selectors, "COUNT_CAP", 100)

    count = message_match_count(filters={})
    response = login(personas["viewer"]).get(reverse("message-list"))

    assert (count.count, count.more, str(count)) == (100, True, "100+")
    assert "<strong>100+</strong> matching" in response.content.decode()
    assert "Select all 100+ matching" in response.content.decode()
    assert str(message_match_count(filters={"queue": "orders"})) == "44"


def test_a_group_filter_is_counted_from_the_failure_group(index):
    index.group("g1", count=12_345, states={"NDLV": 12_000, "FAIL": 345})

    assert str(message_match_count(filters={"group": "g1"})) == "12,345"
    assert str(message_match_count(filters={"group": "g1", "state": "FAIL"})) == "345"
    assert message_match_count(filters={"group": "g1"}).source == "stats"


def test_a_queue_and_state_filter_is_counted_from_the_queue_stats(index):
    index.stats("orders", NDLV=50_000, WAIT=3)

    assert str(message_match_count(filters={"queue": "orders", "state": "NDLV"})) == "50,000"


def test_select_all_matching_posts_the_filter_not_ids(varied, personas):
    client = login(personas["operator"])
    page = client.get(reverse("message-list"), {"queue": "orders", "candidate": "no"})
    html = page.content.decode()
    form = html[html.index('<form id="select-all-matching"') :]
    form = form[: form.index("</form>")]
    assert 'name="queue" value="orders"' in form
    assert 'name="candidate" value="no"' in form
    assert 'name="message_id"' not in form and 'value="c"' not in form

    response = client.post(reverse("message-list"), {"queue": "orders", "candidate": "no"})

    assert response.status_code == 200
    summary = response.content.decode()
    assert 'id="selection-summary"' in summary
    assert "<strong>2</strong> selected by filter" in summary
    assert {r.message_id for r in response.context["page"].rows} == {"c", "d"}


def test_each_row_links_to_its_detail_page(varied, personas):
    html = login(personas["viewer"]).get(reverse("message-list")).content.decode()

    assert 'id="message-table"' in html and 'id="filters"' in html
    for message_id in "abcd":
        assert f'href="{reverse("message-detail", args=[message_id])}"' in html


def test_the_pickers_offer_queues_states_types_and_groups_with_their_counts(index, personas):
    index.stats("orders", NDLV=3, WAIT=2, DLVD=40)
    index.stats("payments", NDLV=1)
    index.group("g-inv", exception_type="ConnectionError", count=4, pattern="no stock for <n>")
    index.group("g-cur", exception_type="ValueError", count=1, queue="payments", states={"NDLV": 1})
    client = login(personas["viewer"])

    html = client.get(reverse("message-list")).content.decode()

    def options(name):
        select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', html, re.S).group(1)
        return re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', select)

    assert options("queue") == [("", "any"), ("orders", "orders (5)"), ("payments", "payments (1)")]
    states = dict(options("state"))
    # Each state by its title, its code on hover (console.glossary).
    assert states["open"].endswith("(6)") and states["NDLV"] == "quarantined (4)"
    assert states["DLVD"] == "delivered (0)"  # what the list holds: none of them failed first
    assert re.search(r'<option value="NDLV" title="quarantined \(NDLV\): [^"]+">', html)
    assert options("exception_type")[1:] == [
        ("ConnectionError", "ConnectionError (4)"),
        ("ValueError", "ValueError (1)"),
    ]
    assert ("g-inv", "no stock for &lt;n&gt; (4)") in options("group")

    kept = client.get(reverse("message-list"), {"queue": "refunds"}).content.decode()
    assert '<option value="refunds" selected>refunds</option>' in kept


def test_the_time_pickers_show_a_moment_given_with_an_offset_in_utc(many, personas):
    response = login(personas["viewer"]).get(
        reverse("message-list"), {"since": "2026-03-01T13:00:00+01:00"}
    )

    html = response.content.decode()
    assert re.search(r'<input type="datetime-local" name="since" value="2026-03-01T12:00:00"', html)
    assert "Failed since (UTC)" in html
