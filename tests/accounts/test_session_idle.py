"""A session ends after SESSION_HOURS without a person's request: the pages' polling (live
counts, lists that follow by themselves, a request's progress) does not keep it alive."""

from datetime import timedelta

from django.contrib.sessions.models import Session
from django.urls import reverse

from console.sessions import POLL_HEADER
from tests.browse.conftest import login


def _expiry(client):
    return Session.objects.get(session_key=client.session.session_key).expire_date


def _age(client, hours):
    Session.objects.filter(session_key=client.session.session_key).update(
        expire_date=_expiry(client) - timedelta(hours=hours)
    )


def test_a_poll_neither_renews_the_session_nor_its_cookie(db, personas):
    client = login(personas["viewer"])
    client.get(reverse("dashboard"))
    _age(client, 1)
    before = _expiry(client)

    polled = client.get(reverse("api-stats"), headers={POLL_HEADER: "1"})

    assert polled.status_code == 200
    assert "sessionid" not in polled.cookies
    assert "Cookie" in polled["Vary"]
    assert _expiry(client) == before


def test_a_persons_request_renews_it(db, personas):
    client = login(personas["viewer"])
    client.get(reverse("dashboard"))
    _age(client, 1)
    before = _expiry(client)

    page = client.get(reverse("message-list"))

    assert "sessionid" in page.cookies
    assert _expiry(client) > before


def test_a_tab_left_polling_is_signed_out_when_the_session_ends(db, personas, settings):
    client = login(personas["viewer"])
    client.get(reverse("dashboard"))
    _age(client, settings.SESSION_COOKIE_AGE // 3600 + 1)  # SESSION_HOURS went by, polls only

    stats = client.get(reverse("api-stats"), headers={POLL_HEADER: "1"})
    page = client.get(reverse("queue-list"), headers={POLL_HEADER: "1"})

    assert stats.status_code in (401, 403)
    assert page.status_code == 302 and page["Location"].startswith(reverse("login"))
