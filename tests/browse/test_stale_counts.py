"""The dashboard says why its counts lag behind the lake, when they do: nothing while every change
is in them (however old they are: on a quiet system they are hours old and right); otherwise the
most precise true thing: no refresh ran since, one is running (for how long, its heartbeat),
another writer holds the read models, or the last one failed (with its error)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from console.browse.freshness import FAILED, HELD, NOT_RUN, RUNNING, counts_staleness
from console.lake.models import LakeCommit
from console.readmodels.models import RefreshRun
from tests.browse.conftest import api, login

NOW = datetime(2026, 11, 27, 9, 12, 3, tzinfo=UTC)


@pytest.fixture(autouse=True)
def intervals(settings):
    settings.REFRESH_INTERVAL_SECONDS = 10
    settings.STATS_STALE_SECONDS = 300
    settings.HEARTBEAT_SECONDS = 10


def _commit(n, *, at, views_applied=False):
    commit = LakeCommit.objects.create(
        dataset="events",
        path=f"events/commit-{n}",
        row_count=1,
        idempotency_key=f"k-{n}",
        views_applied=views_applied,
    )
    LakeCommit.objects.filter(id=commit.id).update(created_at=at)
    return commit


def _refresh(status, *, started, upto=None, finished=None, heartbeat=None, **fields):
    return RefreshRun.objects.create(
        status=status,
        started_at=started,
        heartbeat_at=heartbeat or started,
        finished_at=finished,
        upto_commit=upto,
        **fields,
    )


def _caught_up(commit, *, started, finished):
    """A refresh that took in every change up to `commit`."""
    return _refresh(RefreshRun.COMMITTED, started=started, finished=finished, upto=commit.id)


def test_counts_with_every_change_are_not_stale_however_old(db):
    old = _commit(1, at=NOW - timedelta(hours=5))
    _caught_up(old, started=NOW - timedelta(hours=5), finished=NOW - timedelta(hours=5))

    assert counts_staleness(now=NOW) is None


def test_a_change_waiting_less_than_three_intervals_is_not_stale_yet(db):
    _commit(1, at=NOW - timedelta(seconds=25))

    assert counts_staleness(now=NOW) is None


def test_a_change_a_decision_applied_itself_is_not_waiting(db):
    _commit(1, at=NOW - timedelta(minutes=10), views_applied=True)

    assert counts_staleness(now=NOW) is None


def test_no_refresh_since_asks_whether_the_spark_worker_runs(db):
    first = _commit(1, at=NOW - timedelta(minutes=5))
    _caught_up(first, started=NOW - timedelta(minutes=5), finished=NOW - timedelta(minutes=4))
    _commit(2, at=NOW - timedelta(minutes=3))

    stale = counts_staleness(now=NOW)

    assert stale.reason == NOT_RUN
    assert stale.text == (
        "The counts lack changes made 3 min 0 s ago. The last refresh ended 4 min 0 s ago; a "
        "refresh runs every 10 s: is the spark worker running?"
    )


@pytest.mark.parametrize(
    ("refresh", "reason", "text", "whole"),
    [
        pytest.param(None, NOT_RUN, "No refresh has run yet", False, id="no_refresh_ever_says_so"),
        pytest.param(
            dict(heartbeat=NOW - timedelta(seconds=4), worker="spark@host:42"),
            RUNNING,
            "The counts lack changes made 3 min 0 s ago: a refresh has been running on "
            "spark@host:42 for 2 min 0 s, its last heartbeat 4 s ago (it is alive: a large batch "
            "takes a while).",
            True,
            id="a_long_refresh_that_still_beats_is_said_to_be_running",
        ),
        pytest.param(
            dict(heartbeat=NOW - timedelta(seconds=90)),
            RUNNING,
            "its last heartbeat 1 min 30 s ago: has its worker stopped?",
            False,
            id="a_refresh_whose_heartbeat_stopped_asks_about_its_worker",
        ),
        pytest.param(
            dict(held_for="a purge"),
            HELD,
            "a purge has held the read models for 2 min 0 s",
            False,
            id="another_writer_holding_the_read_models_is_named",
        ),
        pytest.param(
            dict(
                status=RefreshRun.FAILED,
                finished=NOW - timedelta(minutes=1),
                error="Py4JError: the JVM went away\nTraceback ...",
            ),
            FAILED,
            "The counts lack changes made 3 min 0 s ago: the last refresh failed 1 min 0 s ago "
            "(Py4JError: the JVM went away); a refresh runs every 10 s, and the next tries again.",
            True,
            id="a_failed_refresh_says_its_error",
        ),
    ],
)
def test_counts_lacking_a_change_say_why(db, refresh, reason, text, whole):
    """A change made 3 min ago, and the refresh (if any) started 2 min ago: `text` is the whole
    warning, or (not `whole`) a part of it."""
    _commit(1, at=NOW - timedelta(minutes=3))
    if refresh is not None:
        _refresh(**{"status": RefreshRun.RUNNING, "started": NOW - timedelta(minutes=2), **refresh})

    stale = counts_staleness(now=NOW)

    assert stale.reason == reason
    if whole:
        assert stale.text == text
    else:
        assert text in stale.text


def test_the_dashboard_and_the_stats_api_say_it(personas, db):
    _commit(1, at=datetime.now(UTC) - timedelta(minutes=3))
    _refresh(
        RefreshRun.FAILED,
        started=datetime.now(UTC) - timedelta(minutes=2),
        finished=datetime.now(UTC) - timedelta(minutes=1),
        error="<script>alert(1)</script>",
    )

    html = login(personas["viewer"]).get(reverse("dashboard")).content.decode()
    body = api(personas["viewer"]).get(reverse("api-stats")).json()

    warning = html[html.index('id="stats-stale"') :].split("</p>")[0]
    assert 'data-reason="failed"' in warning and " hidden" not in warning
    assert "the last refresh failed" in warning
    # The error is text, never markup.
    assert "<script>" not in warning and "&lt;script&gt;" in warning
    assert body["stale"]["reason"] == "failed"
    assert body["stale"]["text"].startswith("The counts lack changes made 3 min")


def test_current_counts_show_no_warning(personas, db):
    html = login(personas["viewer"]).get(reverse("dashboard")).content.decode()
    body = api(personas["viewer"]).get(reverse("api-stats")).json()

    assert html[html.index('id="stats-stale"') :].split(">")[0].endswith("hidden")
    assert body["stale"] is None
