"""A queue's locked headers (issue 46, point 3; R18): the header names an edit of its messages
keeps as they are, a policy field like the others: in a queue file, refused when it is not a
list of names, loaded again unchanged, said on the queues page and given by the API."""

import pytest
from django.urls import reverse

from console.queues.models import Queue
from console.queues.policy_words import edit_words
from console.queues.services import UNCHANGED, QueueLoadError, queues_load
from tests.browse.conftest import api, login

ORDERS = {"name": "orders", "handler": "workers.demo.handlers.orders"}


def test_a_queue_file_locks_headers_and_loading_it_again_changes_nothing(db):
    entry = {**ORDERS, "locked_headers": ["x-tenant", "X-Signature"]}

    queues_load(data=[entry])
    (again,) = queues_load(data=[entry])

    assert Queue.objects.get(name="orders").locked_headers == ["x-tenant", "X-Signature"]
    assert Queue.objects.get(name="orders").policy().locked_headers == ("x-tenant", "X-Signature")
    assert again.status == UNCHANGED


@pytest.mark.parametrize(
    "value",
    ["x-tenant", [""], [3], ["x" * 256], [f"h-{n}" for n in range(101)]],
    ids=["text", "empty-name", "number", "long-name", "too-many"],
)
def test_locked_headers_that_are_not_a_list_of_names_are_refused(db, value):
    with pytest.raises(QueueLoadError) as refused:
        queues_load(data=[{**ORDERS, "locked_headers": value}])

    assert "locked_headers: must be a list of at most 100 header names" in str(refused.value)
    assert not Queue.objects.exists()


def test_the_queues_page_and_the_api_say_which_headers_are_locked(db, personas):
    queues_load(data=[{**ORDERS, "locked_headers": ["x-tenant"]}])

    page = login(personas["viewer"]).get(reverse("queue-list")).content.decode()
    assert "an edit keeps the product&#x27;s own headers and x-tenant (locked) as they are" in page
    (orders,) = api(personas["viewer"]).get("/api/v1/queues").json()["results"]
    assert orders["policy"]["locked_headers"] == ["x-tenant"]


def test_without_locked_headers_every_other_header_may_be_edited():
    assert edit_words(Queue(name="orders")) == (
        "an edit keeps the product's own headers as they are; every other header may be edited"
    )
