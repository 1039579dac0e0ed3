"""The runs page: every background run with its state, heartbeat, position and timings, the
ones in progress first, stuck told from slow, filters and pages as /api/v1/runs has them."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils.html import escape

from tests.browse.conftest import login
from tests.runs.conftest import HOSTILE

URL = reverse("run-list")


@pytest.fixture(autouse=True)
def _clock_stands_still(request, time_machine):
    """Once the world's runs are made, the clock stands at the moment they were made from: the
    page's ages ("4 s ago") are theirs exactly, however long a busy machine takes to render it."""
    if "world" in request.fixturenames:
        request.getfixturevalue("world")
        time_machine.move_to(request.getfixturevalue("runs").now, tick=False)


def _page(personas, **params):
    response = login(personas["admin"]).get(URL, params)
    assert response.status_code == 200, response.content[:300]
    return response.content.decode()


def _row(page, kind, run):
    found = re.search(rf'<tr class="([^"]*)" id="run-{kind}-{run.id}">(.*?)</tr>', page, re.S)
    assert found, f"{kind} {run.id} is not listed"
    return found[1], found[2]


def _rows(page):
    return re.findall(r'id="run-(\w+)-(\d+)"', page)


def test_it_lists_every_kind_with_its_state_timings_position_and_what_it_did(world, personas):
    page = _page(personas)

    _, delivered = _row(page, "delivery", world["delivered"])
    assert "status-committed" in delivered and "spark-1:4242" in delivered
    assert "orders, billing; 12 claimed" in delivered and "DLVD 9, NDLV 1, WAIT 2" in delivered
    assert "4 s" in delivered  # its duration
    _, refreshed = _row(page, "refresh", world["refreshed"])
    assert "events commits after 3, up to 7" in refreshed and "15 rows changed" in refreshed
    _, compacted = _row(page, "compaction", world["compacted"])
    assert "covers up to events commit 7" in compacted and "1200 rows" in compacted
    assert "20 s" in compacted
    _, skipped = _row(page, "compaction", world["skipped"])
    assert "status-skipped" in skipped and "the lake changed while it folded" in skipped
    _, purged = _row(page, "purge", world["purged"])
    assert "events up to commit 5" in purged and "25 purged" in purged and "3 min 0 s" in purged
    _, queued = _row(page, "purge", world["queued"])
    assert "status-queued" in queued and "preview" in queued and "queued <time" in queued
    # Moments as the `when` built-in writes them, for the browser to show as "x min ago".
    assert "<time datetime=" in delivered


def test_the_runs_in_progress_come_first_then_the_finished_ones_newest_first(world, personas):
    names = [
        *("fresh", "queued", "slow", "stuck"),
        *("delivered", "refreshed", "compacted", "skipped", "purged", "failed", "full"),
    ]
    kinds = {"DeliveryRun": "delivery", "RefreshRun": "refresh", "CompactionRun": "compaction"}

    assert _rows(_page(personas)) == [
        (kinds.get(type(world[n]).__name__, "purge"), str(world[n].id)) for n in names
    ]


def test_a_stuck_run_is_marked_stuck_and_a_slow_one_slow(world, personas):
    page = _page(personas)

    classes, stuck = _row(page, "delivery", world["stuck"])
    assert "stuck" in classes.split() and '<span class="pill stuck"' in stuck
    assert "10 min 0 s ago" in stuck  # its last heartbeat
    classes, slow = _row(page, "refresh", world["slow"])
    assert "slow" in classes.split() and '<span class="pill slow"' in slow
    assert "stuck" not in classes.split()
    assert re.search(r"\b[345] s ago", slow)
    classes, fresh = _row(page, "compaction", world["fresh"])
    assert not {"stuck", "slow"} & set(classes.split())
    assert "so far" in fresh


def test_an_error_that_quotes_a_message_is_shown_as_inert_text(world, personas):
    page = _page(personas)

    _, failed = _row(page, "delivery", world["failed"])
    assert escape(f"ValueError: {HOSTILE}") in failed
    assert "<script>alert" not in page and "<img src=x" not in page


def test_it_filters_by_kind_and_state(world, personas):
    assert _rows(_page(personas, kind="compaction")) == [
        ("compaction", str(world[n].id)) for n in ("fresh", "compacted", "skipped")
    ]
    assert _rows(_page(personas, state="stuck")) == [("delivery", str(world["stuck"].id))]
    assert _rows(_page(personas, kind="refresh", state="failed")) == [
        ("refresh", str(world["full"].id))
    ]


def test_older_runs_are_a_page_further_with_the_filters_kept(runs, personas):
    made = [runs.delivery(ago=timedelta(minutes=60 - i)) for i in range(55)]

    page = _page(personas, kind="delivery")
    following = re.search(r'id="page-next" rel="next" href="([^"]+)"', page)[1]
    second = login(personas["admin"]).get(following.replace("&amp;", "&")).content.decode()

    assert len(_rows(page)) == 50
    assert "kind=delivery" in following
    assert _rows(second) == [("delivery", str(r.id)) for r in reversed(made[:5])]
    assert 'id="page-first"' in second and 'id="page-next"' not in second


def test_a_page_link_that_this_list_did_not_make_is_a_400(db, personas):
    response = login(personas["admin"]).get(URL, {"before": "delivery:x"})

    assert response.status_code == 400
    assert "this is not a page of the runs" in response.content.decode()


def test_the_page_follows_by_itself_and_needs_no_script_of_its_own(world, personas):
    page = _page(personas)

    assert 'data-live-region="runs"' in page
    assert "<script>" not in page  # only the site's files, by src: the CSP allows no other


def test_administrators_find_it_in_the_navigation_and_viewers_do_not(world, personas):
    link = f'id="nav-runs" href="{URL}"'

    assert link in login(personas["admin"]).get(reverse("lockout-list")).content.decode()
    assert link not in login(personas["viewer"]).get(reverse("dashboard")).content.decode()
