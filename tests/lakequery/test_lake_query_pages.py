"""The lake query screens: the form runs a query, the query's page shows its progress (for the
script to update) and its result by keyset, and everything from messages is inert text."""

import re

import pytest
from django.urls import reverse

from console.lakequery.models import LakeQuery
from tests.browse.conftest import login
from tests.html_tags import assert_attributes_inert, html_tags
from tests.lakequery.conftest import done_query, result_row

SCRIPT = "<script>alert(1)</script>"
ATTR = '" onerror="alert(2)'
LINK = "javascript:alert(3)"
SVG = "<svg onload=alert(4)>"
PAYLOAD = f"{SCRIPT} {ATTR} {LINK} {SVG}"
EVIL_ID = f'm/{SCRIPT}"?#{ATTR}'


def test_the_form_runs_a_query_and_leads_to_its_page(db, lake_root, personas):
    client = login(personas["operator"])

    response = client.post(
        reverse("lake-query-list"),
        {"queues": "orders, payments  invoices", "states": ["NDLV", "WAIT"], "body_contains": " x"},
    )

    query = LakeQuery.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("lake-query-detail", args=[query.id])
    assert query.criteria == {
        "queues": ["invoices", "orders", "payments"],
        "states": ["NDLV", "WAIT"],
        "body_contains": " x",
    }


def test_the_form_says_what_is_wrong_with_the_criteria(db, lake_root, personas):
    response = login(personas["operator"]).post(
        reverse("lake-query-list"), {"json_path": "order.id", "json_equals": "7"}
    )

    assert response.status_code == 400
    assert "json_path is a path such as $.order.id" in response.content.decode()
    assert not LakeQuery.objects.exists()


def test_an_empty_form_is_refused(db, lake_root, personas):
    response = login(personas["operator"]).post(reverse("lake-query-list"), {})

    assert response.status_code == 400
    assert "give at least one criterion" in response.content.decode()


def test_a_running_querys_page_shows_its_progress_for_the_script_to_follow(db, personas):
    query = LakeQuery.objects.create(
        requester=personas["operator"], criteria={"sender": "x"}, status="running", progress=42
    )

    page = login(personas["viewer"]).get(reverse("lake-query-detail", args=[query.id]))
    html = page.content.decode()

    assert '<progress id="lq-progress" max="100" value="42">' in html
    assert f'data-status-url="/api/v1/lake-queries/{query.id}"' in html
    assert 'data-status="running"' in html
    assert '<script src="/static/js/lake_query.js" defer></script>' in html
    assert 'id="lake-query-results"' not in html  # no result yet
    assert 'id="lake-query-request"' not in html


def test_a_done_querys_page_pages_its_result_and_offers_an_action_request(db, lake_root, personas):
    query = done_query(personas["operator"], [result_row(f"m-{i}") for i in range(60)], files=2)
    client = login(personas["operator"])
    url = reverse("lake-query-detail", args=[query.id])

    first = client.get(url).content.decode()
    second = client.get(url, {"after": "m-53"}).content.decode()

    assert first.count('class="result-row') == 50
    assert f'href="{url}?after=m-53"' in first  # ids sort as text: m-0, m-1, m-10, ...
    assert second.count('class="result-row') == 10
    assert 'id="page-next"' not in second
    assert f'href="/requests/new?scope=lake_query&amp;query={query.id}"' in first


def test_only_those_who_may_request_actions_are_offered_to(db, lake_root, personas):
    query = done_query(personas["operator"], [result_row("m-1")])

    page = login(personas["viewer"]).get(reverse("lake-query-detail", args=[query.id]))

    assert 'id="lake-query-request"' not in page.content.decode()


def test_a_failed_querys_page_shows_its_error(db, personas):
    query = LakeQuery.objects.create(
        requester=personas["operator"],
        criteria={"body_regex": "(?P<x>a)"},
        body_criteria=True,
        status="failed",
        error="body_regex: Spark refuses this regular expression: Unknown inline modifier",
    )

    html = login(personas["operator"]).get(reverse("lake-query-detail", args=[query.id]))

    assert (
        '<p id="lq-error" class="error">body_regex: Spark refuses this regular expression: '
        "Unknown inline modifier</p>"
    ) in html.content.decode()


def test_the_cancel_button_stops_a_queued_query(db, personas):
    query = LakeQuery.objects.create(requester=personas["operator"], criteria={"sender": "x"})
    client = login(personas["operator"])
    page = client.get(reverse("lake-query-detail", args=[query.id])).content.decode()
    assert 'id="lake-query-cancel"' in page

    response = client.post(reverse("lake-query-cancel", args=[query.id]))

    assert response.status_code == 302
    assert LakeQuery.objects.get(id=query.id).status == LakeQuery.CANCELLED
    assert client.post(reverse("lake-query-cancel", args=[query.id])).status_code == 302


def test_cancelling_is_post_only(db, personas):
    query = LakeQuery.objects.create(requester=personas["operator"], criteria={"sender": "x"})

    response = login(personas["operator"]).get(reverse("lake-query-cancel", args=[query.id]))

    assert response.status_code == 405
    assert LakeQuery.objects.get(id=query.id).status == LakeQuery.QUEUED


# --- Hostile data ---------------------------------------------------------------------------------


@pytest.fixture
def hostile(db, lake_root, personas):
    row = result_row(
        EVIL_ID,
        queue=f"q{SCRIPT}",
        state=SVG,
        sender=LINK,
        conversation_id=SCRIPT,
        reason=PAYLOAD,
    )
    return done_query(
        personas["operator"], [row], criteria={"sender": LINK, "message_id_prefix": PAYLOAD}
    )


def test_hostile_result_rows_and_criteria_are_shown_as_text(hostile, personas):
    html = login(personas["operator"]).get(reverse("lake-query-detail", args=[hostile.id]))
    html = html.content.decode()

    for tag, attrs in html_tags(html):
        # The one drawing is the copy buttons' icon, ours (console/browse/templatetags/ids.py).
        ours = tag == "svg" and attrs.get("class") == "copy-icon"
        assert tag not in ("svg", "iframe", "object", "embed") or ours, (tag, attrs)
        assert_attributes_inert(tag, attrs)
        if tag == "script":
            assert attrs.get("src", "").startswith("/static/js/"), attrs
    assert "<script>alert" not in html
    assert "<svg onload" not in html
    assert "<td>javascript:alert(3)</td>" in html  # the sender, as text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # The link to the message names exactly it: every character of the id is encoded.
    hrefs = re.findall(r'<a class="[^"]*message-link" href="([^"]*)"', html)
    assert hrefs == [reverse("message-detail", args=[EVIL_ID]).replace("'", "&#x27;")]


def test_hostile_criteria_are_text_in_the_list_too(hostile, personas):
    html = login(personas["viewer"]).get(reverse("lake-query-list")).content.decode()

    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_query_pages_send_a_csp_without_unsafe_inline(hostile, personas):
    client = login(personas["operator"])
    for url in (reverse("lake-query-list"), reverse("lake-query-detail", args=[hostile.id])):
        csp = client.get(url)["Content-Security-Policy"]
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp


def test_a_query_number_too_big_for_an_id_is_not_found(db, personas):
    response = login(personas["viewer"]).get(f"/lake-queries/{2**64}/")

    assert response.status_code == 404
