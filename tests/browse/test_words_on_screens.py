"""The queues, message and failure-group pages say what things mean (issue 31, "words people
use"): policies in sentences, a queue that stopped itself again, a message's attempts and
failure, the blacklist-candidate flag only where it means something, and crash batch-mates
apart from real failures."""

import re
from datetime import timedelta

from django.urls import reverse

from console.audit.services import audit_record
from console.queues.models import Queue
from tests.browse.conftest import T0, login
from tests.browse.history import history_event

CRASH = "in flight when a worker crashed"


def _html(response):
    assert response.status_code == 200, response.content[:300]
    return response.content.decode()


def _relapse(admin):
    """orders: enabled by the admin, then disabled again by R11."""
    audit_record(actor=admin, action="queue.enabled", target_type="queue", target_id="orders")
    reason = "queue disabled: 3 failed attempts in a row"
    Queue.objects.filter(name="orders").update(enabled=False, disabled_reason=reason)
    audit_record(
        actor="system",
        action="queue.disabled",
        target_type="queue",
        target_id="orders",
        details={"reason": reason},
    )


def test_the_queues_page_says_a_queue_disabled_itself_again_after_being_enabled(seeded, personas):
    _relapse(personas["admin"])

    page = _html(login(personas["viewer"]).get(reverse("queue-list")))

    said = re.search(r'class="reason queue-relapse">([^<]*)<', page).group(1)
    assert said.startswith("disabled again by itself at ")
    assert said.endswith("admin enabled it: 3 failed attempts in a row")


def test_enabling_a_queue_that_stopped_again_last_time_warns_in_its_flash(seeded, personas):
    _relapse(personas["admin"])
    client = login(personas["admin"])

    response = client.post(reverse("queue-enable", args=["orders"]), follow=True)

    page = _html(response)
    assert "Queue orders is enabled again. Last time it was disabled again by itself" in page
    assert Queue.objects.get(name="orders").enabled


def test_a_queue_disabled_by_hand_shows_its_reason_not_a_relapse(seeded, personas):
    Queue.objects.filter(name="orders").update(enabled=False, disabled_reason="paused by bob")

    page = _html(login(personas["viewer"]).get(reverse("queue-list")))

    assert "paused by bob" in page
    assert "queue-relapse" not in page


def test_the_message_page_says_attempts_and_failures_in_words(index, personas):
    index.row("m-5", delivery_count=5)  # no history in the lake: the index row speaks

    page = _html(login(personas["viewer"]).get(reverse("message-detail", args=["m-5"])))

    assert 'id="message-delivery-count">failed 5 times so far<' in page
    assert "count 0" not in page


def test_a_crash_batch_mate_carries_the_badge_with_its_explanation(index, personas):
    index.row("m-crash", state="TBDL", candidate=True, delivery_count=0, reason=CRASH)
    client = login(personas["viewer"])

    detail = _html(client.get(reverse("message-detail", args=["m-crash"])))
    listed = _html(client.get(reverse("message-list")))

    assert "blacklist candidate</span>" in detail
    assert 'id="message-candidate-note"' in detail
    assert "delivered alone until it proves innocent" in detail
    assert 'title="In a batch when a worker crashed' in listed


def test_a_flagged_message_that_failed_for_its_own_reason_has_no_badge(index, personas):
    index.row("m-own", state="WAIT", candidate=True, delivery_count=2, reason="timeout")
    index.row("m-quarantined", state="NDLV", candidate=True, reason="permanent failure: x")
    client = login(personas["viewer"])

    detail = _html(client.get(reverse("message-detail", args=["m-own"])))
    listed = _html(client.get(reverse("message-list")))

    assert "blacklist candidate" not in detail
    assert 'id="message-candidate-note"' not in detail
    assert "pill candidate" not in listed


def test_crash_batch_mates_are_grouped_apart_from_real_failures(seeded, index, personas):
    index.group(
        "crash", pattern=CRASH, exception_type="", count=177, states={"NDLV": 1, "TBDL": 176}
    )
    client = login(personas["viewer"])

    page = _html(client.get(reverse("group-list")))

    real = page[page.index('id="group-table"') : page.index('id="groups-waiting"')]
    waiting = page[page.index('id="groups-waiting"') :]
    assert "/groups/g1/" in real and "/groups/crash/" not in real
    assert "/groups/crash/" in waiting and "Waiting for isolation after a crash" in waiting

    detail = _html(client.get(reverse("group-detail", args=["crash"])))
    assert 'id="group-batch-mates"' in detail
    assert 'id="group-batch-mates"' not in _html(client.get(reverse("group-detail", args=["g1"])))


def test_a_failure_is_said_with_its_exception_and_an_absolute_utc_time(seeded, personas):
    from console.browse.templatetags.words import moment

    shown = moment(T0, now=T0 + timedelta(seconds=25))

    assert shown.startswith('<time datetime="2026-03-01T12:00:00Z">2026-03-01 12:00:00 UTC</time>')
    assert "(<time" in shown and ">25 s ago</time>)" in shown


def _event(frm, to, *, attempt, count, **fields):
    return history_event(frm, to, at=T0, attempt=attempt, delivery_count=count, **fields)


def test_the_history_and_the_failure_say_what_attempt_and_count_mean(seeded, personas, monkeypatch):
    from console.browse import selectors

    events = [
        _event(None, "TBDL", attempt=0, count=0, reason="ingested"),
        _event("TBDL", "DLNG", attempt=1, count=0),
        _event(
            "DLNG",
            "NDLV",
            attempt=1,
            count=1,
            reason="permanent failure: <b>bad</b>",
            exception_type="PermanentFailure",
        ),
    ]
    monkeypatch.setattr(selectors, "message_history", lambda *, message_id: events)

    page = _html(login(personas["viewer"]).get(reverse("message-detail", args=[seeded])))

    history = page[page.index('id="message-history"') :]
    assert "delivery attempt 1; no failure so far" in history
    assert "delivery attempt 1; failed once so far" in history
    assert "attempt 1, count 0<" not in history
    failed = re.search(r'<p id="message-failed"[^>]*>(.*?)</p>', page, re.S).group(1)
    assert failed.startswith("Failed with <code>PermanentFailure</code> on <time")
    assert "2026-03-01 12:00:00 UTC</time> (<time" in failed
    assert failed.endswith(", delivery attempt 1; failed once so far:")
    assert "&lt;b&gt;bad&lt;/b&gt;" in page and "<b>bad</b>" not in page
