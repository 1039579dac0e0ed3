"""GET /api/v1/runs: every background run, the ones in progress first, stuck told from slow,
filtered by kind and state, a page at a time."""

from datetime import timedelta

import pytest

from tests.api.conftest import openapi_document
from tests.browse.conftest import api
from tests.runs.conftest import HOSTILE

URL = "/api/v1/runs"


def _get(personas, **params):
    response = api(personas["admin"]).get(URL, params)
    assert response.status_code == 200, response.content[:300]
    return response.json()


def _keys(rows):
    return [(r["kind"], r["id"]) for r in rows]


def _key(run):
    return (
        {
            "DeliveryRun": "delivery",
            "RefreshRun": "refresh",
            "CompactionRun": "compaction",
            "PurgeRun": "purge",
        }[type(run).__name__],
        run.id,
    )


def test_it_lists_the_runs_in_progress_first_then_the_finished_ones_newest_first(world, personas):
    body = _get(personas)

    assert _keys(body["results"]) == [
        _key(world[name])
        for name in (
            *("fresh", "queued", "slow", "stuck"),
            *("delivered", "refreshed", "compacted", "skipped", "purged", "failed", "full"),
        )
    ]
    assert [r["active"] for r in body["results"]] == [True] * 4 + [False] * 7
    assert body["next_before"] is None
    assert body["lease_seconds"] == 120


def test_a_run_whose_heartbeat_stopped_is_stuck_and_a_long_one_that_beats_is_slow(world, personas):
    rows = {(r["kind"], r["id"]): r for r in _get(personas)["results"]}

    stuck, slow, fresh = (rows[_key(world[n])] for n in ("stuck", "slow", "fresh"))
    assert (stuck["stuck"], stuck["slow"]) == (True, False)
    assert stuck["heartbeat_age_seconds"] == pytest.approx(600, abs=5)
    assert (slow["stuck"], slow["slow"]) == (False, True)
    assert slow["heartbeat_age_seconds"] == pytest.approx(3, abs=5)
    assert slow["duration_seconds"] == pytest.approx(600, abs=5)
    assert (fresh["stuck"], fresh["slow"]) == (False, False)
    # Only a running run is either.
    assert not any(r["stuck"] or r["slow"] for r in rows.values() if r["state"] != "running")


def test_each_kind_comes_with_its_position_and_what_it_did(world, personas):
    rows = {(r["kind"], r["id"]): r for r in _get(personas)["results"]}

    delivered = rows[_key(world["delivered"])]
    assert delivered | {"started_at": None, "heartbeat_at": None, "finished_at": None} == {
        "kind": "delivery",
        "id": world["delivered"].id,
        "state": "committed",
        "variant": "",
        "active": False,
        "stuck": False,
        "slow": False,
        "worker": "spark-1:4242",
        "started_at": None,
        "heartbeat_at": None,
        "heartbeat_age_seconds": delivered["heartbeat_age_seconds"],
        "finished_at": None,
        "duration_seconds": 4.0,
        "position": "orders, billing; 12 claimed",
        "from_commit": None,
        "upto_commit": None,
        "queues": ["orders", "billing"],
        "claimed": 12,
        "did": "DLVD 9, NDLV 1, WAIT 2",
        "outcomes": {"DLVD": 9, "WAIT": 2, "NDLV": 1},
        "changed": None,
        "purged": None,
        "rows": None,
        "note": "",
        "error": "",
    }
    refreshed = rows[_key(world["refreshed"])]
    assert (refreshed["variant"], refreshed["from_commit"], refreshed["upto_commit"]) == (
        "incremental",
        3,
        7,
    )
    assert refreshed["position"] == "events commits after 3, up to 7"
    assert (refreshed["changed"], refreshed["did"], refreshed["duration_seconds"]) == (
        15,
        "15 rows changed",
        9.0,
    )
    assert rows[_key(world["full"])]["position"] == "all events commits, up to 5"
    compacted = rows[_key(world["compacted"])]
    assert (compacted["variant"], compacted["upto_commit"], compacted["rows"]) == ("state", 7, 1200)
    assert compacted["position"] == "covers up to events commit 7"
    skipped = rows[_key(world["skipped"])]
    assert (skipped["state"], skipped["variant"]) == ("skipped", "history")
    assert skipped["note"].startswith("the lake changed while it folded")
    purged = rows[_key(world["purged"])]
    assert (purged["variant"], purged["upto_commit"], purged["purged"]) == ("purge", 5, 25)
    assert (purged["position"], purged["did"]) == ("events up to commit 5", "25 purged")
    queued = rows[_key(world["queued"])]
    assert (queued["state"], queued["variant"], queued["queues"]) == (
        "queued",
        "preview",
        ["orders"],
    )
    assert (queued["started_at"], queued["duration_seconds"]) == (None, None)
    stuck = rows[_key(world["stuck"])]
    assert (stuck["position"], stuck["claimed"], stuck["finished_at"]) == (
        "orders; 40 claimed",
        40,
        None,
    )


def test_an_error_comes_back_as_the_text_it_is(world, personas):
    rows = {(r["kind"], r["id"]): r for r in _get(personas)["results"]}

    assert rows[_key(world["failed"])]["error"] == f"ValueError: {HOSTILE}"


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"kind": "compaction"}, ["fresh", "compacted", "skipped"]),
        ({"kind": "purge"}, ["queued", "purged"]),
        ({"state": "failed"}, ["failed", "full"]),
        ({"state": "running"}, ["fresh", "slow", "stuck"]),
        ({"state": "stuck"}, ["stuck"]),
        ({"state": "slow"}, ["slow"]),
        ({"state": "done"}, ["purged"]),
        ({"kind": "refresh", "state": "committed"}, ["refreshed"]),
        ({"kind": "delivery", "state": "skipped"}, []),
    ],
    ids=lambda v: str(v),
)
def test_it_filters_by_kind_and_state(world, personas, params, expected):
    assert _keys(_get(personas, **params)["results"]) == [_key(world[n]) for n in expected]


def test_pages_follow_each_other_with_no_run_twice_and_none_left_out(runs, personas):
    # Kinds interleaved in time, made in the order they started (as their apps make them).
    plan = [(timedelta(minutes=5 * i, seconds=1), runs.delivery) for i in range(9)]
    plan += [(timedelta(minutes=5 * i, seconds=2), runs.refresh) for i in range(1, 9, 2)]
    plan += [(timedelta(minutes=5 * i, seconds=3), runs.compaction) for i in range(0, 9, 3)]
    plan += [(timedelta(minutes=22), runs.purge)]
    running = runs.delivery(ago=timedelta(hours=3), status="running")
    made = [make(ago=ago) for ago, make in sorted(plan, key=lambda p: p[0], reverse=True)]

    pages, before = [], None
    while True:
        body = _get(personas, page_size=4, **({"before": before} if before else {}))
        pages.append(_keys(body["results"]))
        before = body["next_before"]
        if before is None:
            break

    assert pages[0][0] == _key(running)  # in progress: first, and on the first page only
    shown = [key for page in pages for key in page][1:]
    newest_first = sorted(made, key=lambda r: r.started_at, reverse=True)
    assert shown == [_key(r) for r in newest_first]
    assert [len(p) for p in pages] == [5, 4, 4, 4, 1]  # 1 running, 17 finished


@pytest.mark.parametrize(
    "params",
    [
        {"kind": "backup"},
        {"state": "sleeping"},
        {"before": "delivery:x"},
        {"before": "delivery:1,delivery:2"},
        {"before": "delivery:0"},
        {"before": "backup:3"},
        {"before": "delivery:99999999999999999999"},
        {"page_size": 0},
        {"page_size": 1000},
    ],
    ids=lambda v: str(v),
)
def test_filters_that_are_not_valid_are_a_400_by_parameter(db, personas, params):
    response = api(personas["admin"]).get(URL, params)

    assert response.status_code == 400
    assert set(response.json()["errors"]) == set(params)


def test_it_is_in_the_openapi_document():
    operation = openapi_document()["paths"]["/api/v1/runs"]["get"]

    assert operation["operationId"] == "runs_list"
    assert {p["name"] for p in operation["parameters"]} == {"kind", "state", "before", "page_size"}
    assert set(operation["responses"]) == {"200", "400", "401", "403", "429"}


def test_the_refresh_lock_held_by_a_purge_shows_as_that_and_not_as_a_refresh(db, personas):
    from console.readmodels.deltas import refresh_lock_held

    with refresh_lock_held(holder="purge 7") as lock:
        rows = {(r["kind"], r["id"]): r for r in _get(personas)["results"]}

    held = rows[("refresh", lock)]
    assert (held["state"], held["variant"], held["active"]) == ("running", "lock for purge 7", True)
    assert held["position"] == "none: refreshes wait while it is held"
    assert held["worker"]
