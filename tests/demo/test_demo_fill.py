"""`seed_demo --background` (make run): the demo's messages sent by the default worker a chunk at a
time, through the real ingest path, while the dashboard and /api/v1/stats say how far it is."""

import types
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone

from console.ingest import demo as demo_fill
from console.ingest.demo import demo_fill_step, demo_progress
from console.ingest.models import Demo, MessageKey
from tests.browse.conftest import api, login
from workers.demo import handlers
from workers.demo.data import (
    FILL_CHUNK,
    FILL_EVERY_SECONDS,
    FILL_FIRST,
    FILL_FIRST_PAUSE_SECONDS,
    demo_fill_records,
    demo_message_ids,
)
from workers.engine.handlers import PermanentFailure

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("demo_dirs")]

ORDERS = 400  # about 800 messages: a first chunk and a few more


@pytest.fixture
def enqueued(monkeypatch):
    """The fill's hand-overs to the default worker, counted instead of sent."""
    calls = []
    monkeypatch.setattr(
        "console.ingest.management.commands.seed_demo.demo_fill_enqueue",
        lambda: calls.append(1),
    )
    return calls


@pytest.fixture
def seed(django_capture_on_commit_callbacks):
    """seed_demo, its hand-overs made once committed; returns what it printed."""

    def seed(*args):
        out = StringIO()
        with django_capture_on_commit_callbacks(execute=True):
            call_command("seed_demo", "--orders", str(ORDERS), *args, stdout=out)
        return out.getvalue()

    return seed


def _viewer():
    # The demo's own viewer: seed_demo gives the demo users new passwords, which ends the
    # sessions of anyone logged in as them before.
    return User.objects.get(username="viewer")


def test_in_the_background_seed_demo_sends_nothing_itself_and_hands_the_fill_over(enqueued, seed):
    output = seed("--background")

    total = len(demo_message_ids(orders=ORDERS))
    assert not MessageKey.objects.exists()
    assert enqueued == [1]
    demo = Demo.objects.get()
    assert (demo.orders, demo.total, demo.sent, demo.filled_at) == (ORDERS, total, 0, None)
    assert f"Demo messages: {total} to send;" in output
    assert "Demo ready." in output


def test_the_fill_sends_a_small_first_chunk_pauses_then_sends_the_rest_in_chunks(enqueued, seed):
    seed("--background")
    total = len(demo_message_ids(orders=ORDERS))

    waits = [demo_fill_step()]
    assert MessageKey.objects.count() == FILL_FIRST
    while waits[-1] is not None:
        waits.append(demo_fill_step())

    chunks = 1 + -(-(total - FILL_FIRST) // FILL_CHUNK)
    assert waits == [FILL_FIRST_PAUSE_SECONDS] + [FILL_EVERY_SECONDS] * (chunks - 2) + [None]
    assert set(MessageKey.objects.values_list("message_id", flat=True)) == set(
        demo_message_ids(orders=ORDERS)
    )
    demo = Demo.objects.get()
    assert demo.sent == total and demo.filled_at is not None
    assert demo_fill_step() is None  # over: nothing more to send


def test_the_first_chunk_is_orders_one_of_them_quarantined_at_its_first_delivery():
    first = demo_fill_records()[:FILL_FIRST]

    assert {r["queue"] for r in first} == {"orders"}  # one delivery run, few commits
    refused = []
    for record in first:
        if record.get("body_encoding"):
            continue
        message = types.SimpleNamespace(body=record["body"].encode(), content_type="json")
        try:
            handlers.orders(message)
        except PermanentFailure:  # R6: quarantined at once (orders' on_permanent)
            refused.append(record["id"])
        except Exception:  # noqa: S110 - transient: retried, quarantined only later
            pass

    assert refused


def test_of_two_tasks_sending_the_same_chunk_only_the_first_to_record_it_goes_on(
    enqueued, seed, monkeypatch
):
    seed("--background")
    ingest = demo_fill.messages_ingest

    def twice(**kwargs):
        # Another task sends the same chunk and records it first.
        result = ingest(**kwargs)
        Demo.objects.update(sent=FILL_FIRST)
        return result

    monkeypatch.setattr(demo_fill, "messages_ingest", twice)

    assert demo_fill_step() is None
    assert Demo.objects.get().sent == FILL_FIRST
    assert MessageKey.objects.count() == FILL_FIRST


def test_seed_demo_again_takes_a_stopped_fill_up_where_it_was(enqueued, seed):
    seed("--background")
    demo_fill_step()  # then the worker stopped (Ctrl-C): its next task is lost

    output = seed("--background")

    assert enqueued == [1, 1]
    assert Demo.objects.get().sent == FILL_FIRST
    total = len(demo_message_ids(orders=ORDERS))
    assert f"Demo messages: {total - FILL_FIRST} of {total} left to send;" in output


def test_a_set_already_all_there_ends_the_fill(enqueued, seed):
    seed("--background")
    seed()  # ingested at once, as the tour does

    output = seed("--background")

    assert "already ingested; nothing to do" in output
    assert Demo.objects.get().filled_at is not None
    assert enqueued == [1]


def test_progress_says_how_far_the_fill_is_then_that_it_is_done_then_nothing(enqueued, seed):
    assert demo_progress() is None  # no demo
    seed("--background")
    demo_fill_step()
    total = len(demo_message_ids(orders=ORDERS))

    progress = demo_progress()

    assert progress == {
        "total": total,
        "sent": FILL_FIRST,
        "filling": True,
        "waiting": False,
        "filled_at": None,
    }
    later = timezone.now() + demo_fill.WAITING_AFTER + timedelta(seconds=1)
    assert demo_progress(now=later)["waiting"] is True  # no worker sends it
    while demo_fill_step() is not None:
        pass
    done = demo_progress()
    assert (done["sent"], done["filling"], done["waiting"]) == (total, False, False)
    gone = done["filled_at"] + demo_fill.DONE_SHOWN + timedelta(seconds=1)
    assert demo_progress(now=gone) is None


def test_a_demo_seeded_at_once_shows_no_progress(seed):
    seed()

    assert demo_progress() is None


def test_the_stats_api_and_the_dashboard_show_the_fill(enqueued, seed):
    seed("--background")
    demo_fill_step()

    body = api(_viewer()).get("/api/v1/stats").json()
    page = login(_viewer()).get("/").content.decode()

    total = len(demo_message_ids(orders=ORDERS))
    assert body["demo"]["sent"] == FILL_FIRST and body["demo"]["total"] == total
    assert body["demo"]["filling"] is True
    assert 'id="demo-progress"' in page
    assert "The demo is filling:" in page
    assert f'<span data-demo="total">{total:,}</span>' in page


def test_without_a_demo_the_dashboard_says_nothing_of_one(personas):
    body = api(personas["viewer"]).get("/api/v1/stats").json()
    page = login(personas["viewer"]).get("/").content.decode()

    assert body["demo"] is None
    assert "demo-progress" not in page
