"""The error notifications sent to senders (R13, end with error): the screen and the API read
the lake's committed `notifications` directories, newest first, a page at a time."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse

from console.decisions import selectors
from tests.browse.conftest import api, login
from tests.browse.test_views_untrusted_data import PAYLOAD, SCRIPT
from tests.decisions.conftest import T0, notification, notifications_commit
from tests.roles import ROLES, assert_page_answers, who

VIEW = {"viewer": 200, "operator": 200, "approver": 200, "admin": 200}


@pytest.fixture
def sent(db, lake_root):
    """n-0 … n-4, a minute apart (n-4 newest); n-3 and n-4 from another sender's conversation."""
    rows = [
        notification(
            f"n-{i}",
            at=T0 + timedelta(minutes=i),
            sender="shop@example.test" if i < 3 else "bank@example.test",
            conversation_id="c-1" if i < 3 else "c-2",
        )
        for i in range(5)
    ]
    notifications_commit(rows[:3])
    notifications_commit(rows[3:])
    return rows


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_the_screen_answers_each_role_as_its_permissions_say(sent, personas, role):
    response = login(personas[role] if role else None).get(reverse("notification-list"))

    assert_page_answers(response, role, VIEW.get(role, 403))


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_the_api_answers_each_role_as_its_permissions_say(sent, personas, role):
    response = api(personas[role] if role else None).get("/api/v1/notifications")

    assert response.status_code == (401 if role is None else VIEW.get(role, 403))


def test_they_are_listed_newest_first_across_directories(sent, personas):
    data = api(personas["viewer"]).get("/api/v1/notifications").json()

    assert [n["message_id"] for n in data["results"]] == ["n-4", "n-3", "n-2", "n-1", "n-0"]
    assert data["results"][0] == {
        "message_id": "n-4",
        "conversation_id": "c-2",
        "sender": "bank@example.test",
        "code": "127",
        "description": "Unable to process message.",
        "at": "2026-03-01T12:04:00Z",
        "run_id": "request:1",
    }
    assert data["next_before"] is None


def test_they_are_paged_by_a_cursor(sent, personas):
    client = api(personas["viewer"])

    first = client.get("/api/v1/notifications", {"page_size": 2}).json()
    second = client.get(
        "/api/v1/notifications", {"page_size": 2, "before": first["next_before"]}
    ).json()
    third = client.get(
        "/api/v1/notifications", {"page_size": 2, "before": second["next_before"]}
    ).json()

    pages = [[n["message_id"] for n in p["results"]] for p in (first, second, third)]
    assert pages == [["n-4", "n-3"], ["n-2", "n-1"], ["n-0"]]
    assert third["next_before"] is None


def test_notifications_at_the_same_moment_are_not_lost_between_pages(db, lake_root):
    notifications_commit([notification(f"s-{i}", at=T0) for i in range(5)])

    seen, before = [], None
    while True:
        page = selectors.notification_list(filters={}, limit=2, before=before)
        seen += [n["message_id"] for n in page.rows]
        before = page.next_before
        if before is None:
            break

    assert seen == ["s-4", "s-3", "s-2", "s-1", "s-0"]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"sender": "bank@example.test"}, ["n-4", "n-3"]),
        ({"conversation": "c-1"}, ["n-2", "n-1", "n-0"]),
        ({"message_id": "n-1"}, ["n-1"]),
        ({"sender": "shop@example.test", "conversation": "c-2"}, []),
    ],
)
def test_they_are_filtered_by_sender_conversation_and_message(sent, personas, params, expected):
    data = api(personas["viewer"]).get("/api/v1/notifications", params).json()
    html = login(personas["viewer"]).get(reverse("notification-list"), params).content.decode()

    assert [n["message_id"] for n in data["results"]] == expected
    assert re.findall(r'class="[^"]*message-link" href="/messages/([^/]+)/"', html) == expected


def test_a_directory_that_is_not_committed_is_not_read(sent, personas):
    notifications_commit([notification("ghost", at=T0 + timedelta(hours=1))], commit=False)

    data = api(personas["viewer"]).get("/api/v1/notifications").json()

    assert "ghost" not in [n["message_id"] for n in data["results"]]


def test_without_any_notification_the_screen_says_so(db, lake_root, personas):
    response = login(personas["viewer"]).get(reverse("notification-list"))

    assert response.status_code == 200
    assert 'id="no-notifications"' in response.content.decode()


def test_the_screen_pages_with_an_older_link(sent, personas, monkeypatch):
    from console.decisions import views

    monkeypatch.setattr(views, "NOTIFICATIONS_PAGE", 3)
    client = login(personas["viewer"])

    html = client.get(reverse("notification-list")).content.decode()
    older = re.search(r'id="page-next" rel="next" href="([^"]+)"', html).group(1)
    html = client.get(older.replace("&amp;", "&")).content.decode()

    linked = re.findall(r'class="[^"]*message-link" href="/messages/([^/]+)/"', html)
    assert linked == ["n-1", "n-0"]


@pytest.mark.parametrize("before", ["garbage", "x" * 2000])
def test_a_cursor_not_made_here_is_a_400(sent, personas, before):
    page = login(personas["viewer"]).get(reverse("notification-list"), {"before": before})
    answer = api(personas["viewer"]).get("/api/v1/notifications", {"before": before})

    assert page.status_code == 400
    assert answer.status_code == 400
    assert answer.json()["detail"]


def test_hostile_text_is_shown_inert(db, lake_root, personas):
    notifications_commit(
        [
            notification(
                f"m/{SCRIPT}",
                at=T0,
                sender=PAYLOAD,
                conversation_id=SCRIPT,
                code=SCRIPT,
                description=PAYLOAD,
            )
        ]
    )

    html = login(personas["viewer"]).get(reverse("notification-list")).content.decode()

    assert "<script>alert" not in html and "<svg onload" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert reverse("message-detail", args=[f"m/{SCRIPT}"]) in html
