"""Saved filters: a person names the message list's current filters and finds them again on the
list; each person sees and deletes only their own."""

import re

import pytest
from django.urls import reverse

from console.browse.models import SavedFilter
from console.browse.services import SAVED_FILTERS_MAX
from tests.browse.conftest import login


@pytest.fixture
def varied_rows(index):
    index.row("m-1", queue="orders")
    index.row("m-2", queue="payments")


def _save(client, name, **params):
    return client.post(reverse("saved-filter-create"), {"name": name, **params})


def test_a_viewer_saves_the_current_filters_and_opens_them_again(varied_rows, personas):
    client = login(personas["viewer"])
    listing = client.get(reverse("message-list"), {"queue": "payments", "sort": "queue"})
    form = re.search(r'<form id="save-filter".*?</form>', listing.content.decode(), re.S).group(0)
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', form))
    fields.pop("csrfmiddlewaretoken")
    assert fields == {"queue": "payments", "sort": "queue"}

    response = _save(client, "  payments   by queue ", **fields)

    saved = SavedFilter.objects.get()
    assert (saved.owner, saved.name, saved.query) == (
        personas["viewer"],
        "payments by queue",
        "queue=payments&sort=queue",
    )
    assert response["Location"] == reverse("message-list") + "?queue=payments&sort=queue"
    page = client.get(reverse("message-list")).content.decode()
    link = r'<a href="/messages/\?queue=payments&amp;sort=queue"[^>]*>payments by queue</a>'
    assert re.search(link, page)


def test_saving_a_name_again_replaces_it(varied_rows, personas):
    client = login(personas["viewer"])
    _save(client, "mine", queue="orders")
    _save(client, "mine", queue="payments")

    assert list(SavedFilter.objects.values_list("name", "query")) == [("mine", "queue=payments")]


def test_each_person_sees_and_deletes_only_their_own(varied_rows, personas):
    _save(login(personas["viewer"]), "viewer's", queue="orders")
    theirs = SavedFilter.objects.get()
    operator = login(personas["operator"])

    assert "viewer&#x27;s" not in operator.get(reverse("message-list")).content.decode()
    delete = reverse("saved-filter-delete", args=[theirs.id])
    assert operator.post(delete).status_code == 404
    assert SavedFilter.objects.exists()
    assert login(personas["viewer"]).post(delete).status_code == 302
    assert not SavedFilter.objects.exists()


def test_an_invalid_filter_or_no_name_is_not_saved_and_says_why(varied_rows, personas):
    client = login(personas["viewer"])

    bad = client.post(reverse("saved-filter-create"), {"name": "x", "state": "BOGUS"}, follow=True)
    nameless = _save(client, "   ", queue="orders")

    assert "not valid" in bad.content.decode()
    assert "give the filter a name" in client.get(nameless["Location"]).content.decode()
    assert not SavedFilter.objects.exists()


def test_a_person_keeps_at_most_fifty(varied_rows, personas):
    client = login(personas["viewer"])
    SavedFilter.objects.bulk_create(
        SavedFilter(owner=personas["viewer"], name=f"f{i}", query="queue=orders")
        for i in range(SAVED_FILTERS_MAX)
    )

    response = _save(client, "one more", queue="payments")

    assert "delete one to save another" in client.get(response["Location"]).content.decode()
    assert SavedFilter.objects.count() == SAVED_FILTERS_MAX


def test_an_auditor_cannot_save_a_filter(db, personas):
    assert _save(login(personas["auditor"]), "x", queue="orders").status_code == 403
