"""Every screen and API endpoint, for every role and for an anonymous visitor.

viewer: metadata; operator and approver: metadata and bodies; admin: metadata and queues, not
bodies; auditor, application and outsider: none of it. Anonymous: pages send to the login page,
the API answers 401."""

import pytest
from django.urls import reverse

from console.queues.models import Queue
from tests.browse.conftest import api, login
from tests.roles import role_matrix

META = {"viewer": 200, "operator": 200, "approver": 200, "admin": 200}
BODY = {"operator": 200, "approver": 200}
ADMIN_POST_PAGE = {"admin": 302}
ADMIN_POST_API = {"admin": 200}

# (name, method, url, {role: status}); a role not named gets 403.
PAGES = [
    ("dashboard", "get", lambda: reverse("dashboard"), META),
    ("message-list", "get", lambda: reverse("message-list"), META),
    ("message-list filtered", "get", lambda: reverse("message-list") + "?queue=orders", META),
    ("select all matching", "post", lambda: reverse("message-list"), META),
    ("message-detail", "get", lambda: reverse("message-detail", args=["order-1"]), META),
    ("message-raw", "get", lambda: reverse("message-raw", args=["order-1"]), BODY),
    ("message-headers", "get", lambda: reverse("message-headers", args=["order-1"]), META),
    ("group-list", "get", lambda: reverse("group-list"), META),
    ("group-detail", "get", lambda: reverse("group-detail", args=["g1"]), META),
    ("queue-list", "get", lambda: reverse("queue-list"), META),
    ("queue-enable", "post", lambda: reverse("queue-enable", args=["orders"]), ADMIN_POST_PAGE),
]
APIS = [
    ("index", "get", "/api/v1/index/messages", META),
    ("groups", "get", "/api/v1/groups", META),
    ("group", "get", "/api/v1/groups/g1", META),
    ("queues", "get", "/api/v1/queues", META),
    ("stats", "get", "/api/v1/stats", META),
    ("message", "get", "/api/v1/messages/order-1", META),
    ("body", "get", "/api/v1/messages/order-1/body", BODY),
    ("headers", "get", "/api/v1/messages/order-1/headers", META),
    ("enable", "post", "/api/v1/queues/orders/enable", ADMIN_POST_API),
]


@pytest.fixture
def world(seeded):
    Queue.objects.filter(name="orders").update(enabled=False, disabled_reason="5 failures")


@role_matrix(("name", "method", "url", "allowed"), PAGES)
def test_each_page_answers_each_role_as_its_permissions_say(
    world, personas, role, name, method, url, allowed
):
    client = login(personas[role] if role else None)
    target = url()
    response = getattr(client, method)(target)

    if role is None:
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login") + "?next=")
    elif name == "dashboard" and role not in allowed:
        # The console's home for one who may not read the counts is the first page they may
        # read: the audit trail for an auditor, their own account for anyone else.
        home = reverse("audit-list") if role == "auditor" else reverse("my-account")
        assert (response.status_code, response["Location"]) == (302, home)
    else:
        assert response.status_code == allowed.get(role, 403), response.content[:300]


@role_matrix(("name", "method", "url", "allowed"), APIS)
def test_each_api_endpoint_answers_each_role_as_its_permissions_say(
    world, personas, role, name, method, url, allowed
):
    response = getattr(api(personas[role] if role else None), method)(url)

    expected = 401 if role is None else allowed.get(role, 403)
    assert response.status_code == expected, response.content[:300]


def test_the_login_page_is_the_one_public_page(db):
    response = login().get(reverse("login"))

    assert response.status_code == 200
    assert b'id="login-form"' in response.content


def test_logging_in_leads_to_the_dashboard(personas):
    client = login()
    response = client.post(reverse("login"), {"username": "viewer", "password": "pw-viewer-1234"})

    assert response.status_code == 302
    assert response["Location"] == reverse("dashboard")
    assert client.get(reverse("dashboard")).status_code == 200


def test_an_auditor_may_log_in_but_sees_no_message_screen(seeded, personas):
    client = login()
    client.post(reverse("login"), {"username": "auditor", "password": "pw-auditor-1234"})

    assert client.get(reverse("dashboard"))["Location"] == reverse("audit-list")
    response = client.get(reverse("message-list"))
    assert response.status_code == 403
    assert b'id="current-user"' in response.content  # still signed in, can log out
    assert b"Messages</a>" not in response.content


def test_logout_is_a_post_and_ends_the_session(personas):
    client = login(personas["viewer"])
    assert client.get(reverse("logout")).status_code == 405

    response = client.post(reverse("logout"))

    assert response.status_code == 302
    assert client.get(reverse("dashboard")).status_code == 302


@pytest.mark.parametrize("url", ["queue-enable"], ids=["queue-enable"])
def test_re_enabling_a_queue_is_post_only(world, personas, url):
    response = login(personas["admin"]).get(reverse(url, args=["orders"]))

    assert response.status_code == 405
    assert Queue.objects.get(name="orders").enabled is False


def test_an_admin_re_enables_a_disabled_queue_from_the_dashboard(world, personas):
    client = login(personas["admin"])
    page = client.get(reverse("dashboard")).content.decode()
    assert 'id="disabled-queues"' in page
    assert reverse("queue-enable", args=["orders"]) in page

    response = client.post(reverse("queue-enable", args=["orders"]), {"next": "/queues/"})

    assert response.status_code == 302
    assert response["Location"] == "/queues/"
    queue = Queue.objects.get(name="orders")
    assert (queue.enabled, queue.disabled_reason, queue.consecutive_failures) == (True, "", 0)


def test_it_does_not_redirect_to_another_site_after_re_enabling(world, personas):
    response = login(personas["admin"]).post(
        reverse("queue-enable", args=["orders"]), {"next": "https://evil.example/"}
    )

    assert response["Location"] == reverse("dashboard")


def test_the_re_enable_button_is_shown_only_to_those_who_may_use_it(world, personas):
    page = login(personas["operator"]).get(reverse("dashboard")).content.decode()

    assert 'id="disabled-queues"' in page
    assert reverse("queue-enable", args=["orders"]) not in page


def test_the_enable_api_re_enables_a_queue(world, personas):
    response = api(personas["admin"]).post("/api/v1/queues/orders/enable")

    assert response.json() == {"name": "orders", "enabled": True, "changed": True}
    assert Queue.objects.get(name="orders").enabled is True


def test_the_enable_page_checks_csrf(world, personas):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(personas["admin"])

    response = client.post(reverse("queue-enable", args=["orders"]))

    assert response.status_code == 403
    assert Queue.objects.get(name="orders").enabled is False
