"""The search box: a message id (whole or its beginning) opens the message, even one that never
failed; other text finds reasons, senders, conversations, failure groups and queues, each with a
count that opens a list of that many messages."""

import re

import pytest
from django.urls import reverse

from tests.browse.conftest import api, login


def _search(client, q):
    return client.get(reverse("search"), {"q": q})


def _html(response):
    assert response.status_code == 200, response.status_code
    return response.content.decode()


@pytest.fixture
def found(index, personas):
    """Three quarantined orders in one group, a refund with another reason, and a message that
    was delivered at once: it is in the lake but never in the index."""
    index.group("g-stock", pattern="inventory service unavailable for item <n>", count=3)
    for i in (1, 2, 3):
        index.message(
            f"order-{i}",
            reason=f"inventory service unavailable for item {i}",
            group_id="g-stock",
            sender="shop@example.test",
            conversation_id="conv-7",
        )
    index.message("refund-1", queue="refunds", reason="card declined", sender="bank@example.test")
    index.ingest("delivered-once", queue="orders")
    return index


def test_a_whole_id_opens_the_message_even_one_that_never_failed(found, personas):
    client = login(personas["viewer"])

    response = _search(client, "delivered-once")

    assert response.status_code == 302
    assert response["Location"] == reverse("message-detail", args=["delivered-once"])
    page = client.get(response["Location"])
    assert page.status_code == 200


def test_the_beginning_of_one_id_opens_it_and_of_several_lists_them(found, personas):
    client = login(personas["viewer"])

    response = _search(client, "refund-")
    assert response.status_code == 302
    assert response["Location"] == reverse("message-detail", args=["refund-1"])

    html = _html(_search(client, "order-"))
    listed = re.findall(r'class="search-id" href="[^"]+">([^<]+)</a>', html)
    assert listed == ["order-1", "order-2", "order-3"]


def test_words_of_a_reason_give_a_count_that_opens_a_list_of_as_many(found, personas):
    client = login(personas["operator"])

    html = _html(_search(client, "service unavailable"))

    reasons = re.search(r'<li id="search-reasons"><a href="([^"]+)"><strong>(\d+)</strong>', html)
    assert reasons is not None, html
    link, count = reasons.group(1).replace("&amp;", "&"), int(reasons.group(2))
    assert count == 3
    listing = _html(client.get(link))
    assert re.search(r'id="match-count"[^>]*><strong>3</strong> matching', listing)
    assert listing.count('<tr class="message-row') == 3


def test_a_sender_and_a_conversation_are_found_exactly(found, personas):
    client = login(personas["viewer"])

    html = _html(_search(client, "shop@example.test"))
    assert re.search(r'id="search-senders"><a href="[^"]*sender=shop%40example.test"', html)
    assert "<strong>3</strong> from this sender" in html

    html = _html(_search(client, "conv-7"))
    assert "<strong>3</strong> in this conversation" in html


def test_failure_groups_and_queues_are_found_by_name(found, personas):
    html = _html(_search(login(personas["operator"]), "unavailable"))
    assert f'href="{reverse("group-detail", args=["g-stock"])}"' in html

    html = _html(_search(login(personas["operator"]), "refund"))
    assert re.search(r'class="search-queue" href="[^"]*queue=refunds">refunds</a>', html)


def test_nothing_found_says_so_and_a_short_text_searches_ids_senders_conversations_only(
    found, personas
):
    client = login(personas["viewer"])

    html = _html(_search(client, "no such thing anywhere"))
    assert 'id="search-nothing"' in html

    html = _html(_search(client, "ca"))  # "card declined" has it, but two letters are no search
    assert 'id="search-reasons"' not in html
    assert "from 3 characters on" in html


def test_the_query_is_shown_as_text(found, personas):
    html = _html(_search(login(personas["viewer"]), '<img src=x onerror="alert(1)">'))

    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html


def test_an_auditor_may_not_search_messages(found, personas):
    assert _search(login(personas["auditor"]), "order-1").status_code == 403
    assert api(personas["auditor"]).get("/api/v1/search", {"q": "order-1"}).status_code == 403


def test_the_search_box_is_on_every_page_of_those_who_may_search(found, personas):
    html = _html(login(personas["viewer"]).get(reverse("group-list")))
    assert (
        f'<form id="search" class="search" role="search" method="get" action="{reverse("search")}">'
        in html
    )
    assert 'id="search-box"' not in _html(login(personas["auditor"]).get(reverse("audit-list")))


def test_the_api_answers_what_the_box_finds(found, personas):
    client = api(personas["viewer"])

    exact = client.get("/api/v1/search", {"q": "delivered-once"}).json()
    assert exact["message_id"] == "delivered-once"

    text = client.get("/api/v1/search", {"q": "order-"}).json()
    assert text["message_id"] is None
    assert text["message_ids"] == ["order-1", "order-2", "order-3"]
    assert text["senders"] == {"count": 0, "more": False}

    reasons = client.get("/api/v1/search", {"q": "unavailable"}).json()
    assert reasons["reasons"] == {"count": 3, "more": False}
    assert [g["fingerprint"] for g in reasons["groups"]] == ["g-stock"]

    assert client.get("/api/v1/search").status_code == 400
