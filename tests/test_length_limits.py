"""Length limits are shown and refused, never cut: every text field of the console's forms has a
limit, its input carries maxlength and a visible hint ("up to 500 characters"), and a longer value
is refused with a message naming the limit and the length, with nothing changed."""

import importlib
import inspect
import pkgutil

import pytest
from django import forms
from django.contrib.messages import get_messages
from django.urls import reverse

import console
from console.audit.models import AuditEntry
from console.forms import LimitedForm
from console.queues.forms import QueuePauseForm
from console.queues.models import Queue
from console.queues.services import PAUSE_REASON_MAX
from tests.browse.conftest import api, login


def _flashes(response):
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_a_10000_character_pause_reason_is_refused_with_the_limit_named(db, personas):
    queue = Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")

    response = login(personas["admin"]).post(
        reverse("queue-pause", args=["orders"]), {"reason": "x" * 10_000}
    )

    assert response.status_code == 302
    assert _flashes(response) == [
        "Reason is at most 500 characters; this one has 10,000. The queue is not paused."
    ]
    queue.refresh_from_db()
    assert queue.enabled and queue.disabled_reason == ""
    assert not AuditEntry.objects.filter(action="queue.paused").exists()


def test_a_pause_reason_at_the_limit_is_kept_whole(db, personas):
    queue = Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")
    reason = "y" * PAUSE_REASON_MAX

    login(personas["admin"]).post(reverse("queue-pause", args=["orders"]), {"reason": reason})

    queue.refresh_from_db()
    assert not queue.enabled
    assert queue.disabled_reason == f"paused by admin: {reason}"


def test_the_api_refuses_a_long_pause_reason_naming_the_limit(db, personas):
    queue = Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")

    response = api(personas["admin"]).post(
        reverse("api-queue-pause", args=["orders"]), {"reason": "x" * 10_000}, format="json"
    )

    assert response.status_code == 400
    assert "500" in response.json()["detail"]
    queue.refresh_from_db()
    assert queue.enabled


def test_a_text_field_shows_its_limit_and_carries_maxlength():
    html = str(QueuePauseForm()["reason"])

    assert 'maxlength="500"' in html
    assert 'aria-describedby="id_reason_limit"' in html
    assert '<span class="limit" id="id_reason_limit">up to 500 characters</span>' in html


def test_a_long_value_is_refused_with_the_limit_and_the_length():
    form = QueuePauseForm({"reason": "z" * 10_000})

    assert not form.is_valid()
    assert form.errors["reason"] == ["Reason is at most 500 characters; this one has 10,000."]


def test_a_saved_filters_long_name_is_refused_not_cut(db, personas):
    client = login(personas["viewer"])

    response = client.post(reverse("saved-filter-create"), {"name": "n" * 150, "state": "NDLV"})

    assert _flashes(response) == ["Name is at most 100 characters; this one has 150."]
    assert not personas["viewer"].saved_filters.exists()


def _console_forms():
    """Every form class the console's apps define (forms.py and views), by module."""
    found = []
    for module_info in pkgutil.walk_packages(console.__path__, "console."):
        name = module_info.name
        if not name.endswith(("forms", "views", "exports")) or ".migrations" in name:
            continue
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, forms.BaseForm) and cls.__module__ == name:
                found.append(cls)
    return found


FORMS = _console_forms()


# An edited body's limit is in bytes (MAX_BODY_BYTES, megabytes): the service refuses a longer
# one in words; an address has the length of an address.
UNLIMITED = {"edited_body"}


@pytest.mark.parametrize("form_class", FORMS, ids=[f"{f.__module__}.{f.__name__}" for f in FORMS])
def test_every_console_form_limits_its_text_fields_in_words(form_class):
    assert issubclass(form_class, LimitedForm)
    for name, field in form_class.base_fields.items():
        if name in UNLIMITED or isinstance(field, forms.GenericIPAddressField):
            continue
        if isinstance(field, forms.CharField):
            assert field.max_length, f"{name} has no limit"


def test_a_failure_group_filter_longer_than_any_queue_name_is_refused_in_words(client, personas):
    client.force_login(personas["viewer"])

    response = client.get("/groups/", {"queue": "q" * 150})

    assert response.status_code == 400
    assert "Queue is at most 100 characters; this one has 150." in response.content.decode()
