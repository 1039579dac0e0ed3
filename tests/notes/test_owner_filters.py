"""The owner filters ("mine", "unowned", "owned", a username) on the message list and the group
list, pages and API, and the owner badges. A message in a group someone took is that person's,
unless someone took the message itself."""

import re

import pytest
from django.urls import reverse

from console.decisions.forms import filter_scope
from console.decisions.scope import ScopeError
from console.notes import services
from console.notes.models import GROUP, MESSAGE
from tests.notes.conftest import api, login


@pytest.fixture
def owned(world, personas):
    """operator owns group g1 and order-5; approver took order-2 (inside g1) for themselves."""
    services.investigation_take(actor=personas["operator"], kind=GROUP, target_id="g1")
    services.investigation_take(actor=personas["operator"], kind=MESSAGE, target_id="order-5")
    services.investigation_take(actor=personas["approver"], kind=MESSAGE, target_id="order-2")
    return world


def _page_ids(client, query):
    response = client.get(reverse("message-list") + query)
    assert response.status_code == 200, response.content
    return sorted(
        re.findall(r'class="message-link" href="[^"]*">([^<]+)</a>', response.content.decode())
    )


def _api_ids(client, query):
    response = client.get("/api/v1/index/messages" + query)
    assert response.status_code == 200, response.content
    return sorted(row["id"] for row in response.json()["results"])


@pytest.mark.parametrize(
    ("who", "query", "expected"),
    [
        # The group's members count as the group owner's, except the one the approver took.
        ("operator", "?owner=mine", ["order-1", "order-3", "order-5"]),
        ("approver", "?owner=mine", ["order-2"]),
        ("viewer", "?owner=mine", []),
        ("viewer", "?owner=operator", ["order-1", "order-3", "order-5"]),
        ("viewer", "?owner=approver", ["order-2"]),
        ("viewer", "?owner=unowned", ["order-4"]),
        ("viewer", "?owner=owned", ["order-1", "order-2", "order-3", "order-5"]),
        ("viewer", "?owner=nobody-by-that-name", []),
        ("viewer", "?owner=operator&queue=orders&state=NDLV", ["order-1", "order-3", "order-5"]),
    ],
)
def test_the_message_list_and_its_api_filter_by_owner(owned, personas, who, query, expected):
    assert _page_ids(login(personas[who]), query) == expected
    assert _api_ids(api(personas[who]), query) == expected


def test_the_match_count_follows_the_owner_filter(owned, personas):
    response = api(personas["operator"]).get("/api/v1/index/messages?owner=mine")

    assert response.json()["count"] == {"value": 3, "more": False, "source": "index"}


def test_the_message_list_shows_each_rows_owner(owned, personas):
    html = login(personas["viewer"]).get(reverse("message-list")).content.decode()

    badges = dict(
        re.findall(
            r'class="message-link" href="[^"]*">([^<]+)</a>\s*'
            r'<span class="pill owner-badge" title="[^"]*">&#128269; ([^<]+)</span>',
            html,
        )
    )
    assert badges == {
        "order-1": "operator (group)",
        "order-2": "approver",
        "order-3": "operator (group)",
        "order-5": "operator",
    }


def test_the_api_gives_each_rows_owner(owned, personas):
    rows = api(personas["viewer"]).get("/api/v1/index/messages").json()["results"]

    assert {row["id"]: row["owner"] for row in rows} == {
        "order-1": "operator",
        "order-2": "approver",
        "order-3": "operator",
        "order-4": None,
        "order-5": "operator",
    }


@pytest.mark.parametrize(
    ("who", "owner", "expected"),
    [
        ("operator", "mine", ["g1"]),
        ("approver", "mine", []),
        ("viewer", "operator", ["g1"]),
        ("viewer", "unowned", ["g2"]),
        ("viewer", "owned", ["g1"]),
        ("viewer", "", ["g1", "g2"]),
    ],
)
def test_the_group_list_and_its_api_filter_by_owner(owned, personas, who, owner, expected):
    page = login(personas[who]).get(reverse("group-list"), {"owner": owner})
    assert page.status_code == 200
    shown = re.findall(r'class="group-link" href="/groups/([^/]+)/"', page.content.decode())
    assert sorted(shown) == expected

    answer = api(personas[who]).get("/api/v1/groups", {"owner": owner})
    assert answer.status_code == 200
    assert sorted(g["fingerprint"] for g in answer.json()["results"]) == expected


def test_the_group_list_and_its_api_show_the_owner(owned, personas):
    page = login(personas["viewer"]).get(reverse("group-list")).content.decode()
    assert 'title="under investigation by operator">&#128269; operator</span>' in page

    groups = api(personas["viewer"]).get("/api/v1/groups").json()["results"]
    assert {g["fingerprint"]: g["owner"] for g in groups} == {"g1": "operator", "g2": None}
    detail = api(personas["viewer"]).get("/api/v1/groups/g1").json()
    assert detail["owner"] == "operator"


def test_select_all_matching_freezes_whose_mine_meant(owned, personas):
    response = login(personas["operator"]).post(reverse("message-list"), {"owner": "mine"})

    assert response.status_code == 200
    html = response.content.decode()
    # The filter the selection carries names the user, not "mine": an approver who reads the
    # request later sees the operator's messages, not their own.
    assert '<input type="hidden" name="owner" value="operator">' in html
    assert 'value="mine"' not in re.search(r'id="select-all-matching".*?</form>', html, re.S)[0]


def test_a_stored_filter_scope_refuses_mine_and_takes_a_username(owned):
    with pytest.raises(ScopeError, match="mine"):
        filter_scope({"owner": "mine"})

    assert filter_scope({"owner": "operator"}) == {
        "kind": "filter",
        "filters": {"owner": "operator"},
    }


def test_the_owner_pickers_offer_the_words_and_the_current_owners(owned, personas):
    html = login(personas["viewer"]).get(reverse("message-list")).content.decode()
    picker = re.search(r'<select name="owner".*?</select>', html, re.S)[0]
    offered = re.findall(r'<option value="([^"]*)"', picker)

    assert offered == ["", "mine", "unowned", "owned", "approver", "operator"]
