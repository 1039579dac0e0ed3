"""The pages a person lands on when something is missing, forbidden or broken: styled like the
rest of the console (DEBUG is off in tests, as in production), saying what to do next."""

from django.test import RequestFactory
from django.urls import reverse
from django.views.defaults import server_error

from tests.browse.conftest import login


def test_an_unknown_message_gives_a_styled_404_that_points_to_the_search_box(index, personas):
    response = login(personas["operator"]).get(reverse("message-detail", args=["no-such-id"]))

    assert response.status_code == 404
    page = response.content.decode()
    assert 'id="not-found"' in page
    assert 'id="search-box"' in page
    assert "css/console.css" in page


def test_a_404_shows_its_reason_as_text(index, personas):
    response = login(personas["operator"]).get("/groups/%3Cb%3Ex%3C%2Fb%3E/")

    assert response.status_code == 404
    assert "<b>x</b>" not in response.content.decode()


def test_a_page_a_role_may_not_see_is_a_styled_403(index, personas):
    response = login(personas["viewer"]).get(reverse("audit-list"))

    assert response.status_code == 403
    page = response.content.decode()
    assert 'id="forbidden"' in page and "css/console.css" in page


def test_the_500_page_needs_no_user_or_database_to_render(db):
    response = server_error(RequestFactory().get("/"))

    assert response.status_code == 500
    page = response.content.decode()
    assert 'id="server-error"' in page and "css/console.css" in page
