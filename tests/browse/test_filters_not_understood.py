"""Issue 45, point 2, for the lists: a filter a list cannot read (`since=garbage`, a size it does
not offer, a state that is none, a parameter that is no filter such as `failed_since`) is said
on the page, "Not understood: ...", with what to give instead, and the list still shows, without
it; the API answers 400 for the same values. Date filters take the picker's format and ISO."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse

from tests.browse.conftest import T0, api, login


@pytest.fixture
def three(index):
    """a, b, c quarantined in orders, failing an hour apart from T0."""
    for hours, message_id in enumerate("abc"):
        index.row(message_id, last_failure_at=T0 + timedelta(hours=hours))


def _listed(response):
    return {row.message_id for row in response.context["page"].rows}


def _warnings(response):
    html = response.content.decode()
    return re.findall(r'<li class="flash-warning">([^<]*)</li>', html)


@pytest.mark.parametrize(
    ("params", "said"),
    [
        (
            {"since": "garbage"},
            "Not understood: failed since &#x27;garbage&#x27;: use a date like 2026-12-07 or "
            "2026-12-07 14:30 (UTC).",
        ),
        (
            {"size": "7"},
            "Not understood: page size &#x27;7&#x27;: not one of the available choices; use one "
            "of 25, 50, 100, 200.",
        ),
        ({"state": "NOPE"}, "Not understood: state &#x27;NOPE&#x27;: not one of the available"),
    ],
    ids=["date", "size", "state"],
)
def test_a_value_the_message_list_cannot_read_is_said_and_dropped_and_the_list_shows(
    three, personas, params, said
):
    response = login(personas["viewer"]).get(reverse("message-list"), params)

    assert response.status_code == 400  # part of the query was not understood
    assert _listed(response) == {"a", "b", "c"}
    assert any(w.startswith(said) for w in _warnings(response)), _warnings(response)


def test_the_other_filters_still_apply_when_one_is_dropped(three, personas):
    response = login(personas["viewer"]).get(
        reverse("message-list"), {"since": "garbage", "until": "2026-03-01T12:30"}
    )

    assert _listed(response) == {"a"}


def test_a_parameter_that_is_no_filter_is_said_with_the_filter_it_resembles(three, personas):
    response = login(personas["viewer"]).get(reverse("message-list"), {"failed_since": "garbage"})

    assert response.status_code == 200
    assert _listed(response) == {"a", "b", "c"}
    assert _warnings(response) == [
        "Not understood: failed_since=&#x27;garbage&#x27;: this list has no such filter; did "
        "you mean failed since (since=…)?."
    ]


def test_a_value_not_understood_is_shown_as_inert_text(three, personas):
    response = login(personas["viewer"]).get(
        reverse("message-list"), {"since": "<script>alert(1)</script>"}
    )

    html = response.content.decode()
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.parametrize(
    "since",
    ["2026-03-01T13:00", "2026-03-01 13:00", "2026-03-01T13:00:00+00:00", "2026-03-01T14:00+01:00"],
    ids=["picker", "typed", "iso", "iso-offset"],
)
def test_a_date_filter_takes_the_pickers_format_and_iso(three, personas, since):
    response = login(personas["viewer"]).get(reverse("message-list"), {"since": since})

    assert response.status_code == 200
    assert _listed(response) == {"b", "c"}
    assert not _warnings(response)


def test_the_date_filters_are_pickers_that_name_their_zone(three, personas):
    html = login(personas["viewer"]).get(reverse("message-list")).content.decode()

    assert re.search(r'<input type="datetime-local" name="since"', html)
    assert "failed since (utc)" in html.lower()


def test_the_runs_page_says_a_page_link_it_did_not_make_and_shows_the_first_page(personas):
    response = login(personas["admin"]).get(reverse("run-list"), {"before": "delivery:x"})

    assert response.status_code == 400
    assert response.context["page"] is not None
    assert "this is not a page of the runs" in " ".join(_warnings(response))


@pytest.mark.parametrize(
    ("url", "params", "field"),
    [
        ("/api/v1/messages", {"since": "garbage"}, "since"),
        ("/api/v1/messages", {"state": "NOPE"}, "state"),
        ("/api/v1/messages", {"page_size": "lots"}, "page_size"),
        ("/api/v1/requests", {"status": "x"}, "status"),
    ],
    ids=["messages-since", "messages-state", "messages-size", "requests-status"],
)
def test_the_api_answers_400_naming_the_parameter_it_cannot_read(
    three, personas, url, params, field
):
    response = api(personas["operator"]).get(url, params)

    assert response.status_code == 400
    assert response.json()["detail"].startswith(f"{field}: ")
    assert field in response.json()["errors"]
