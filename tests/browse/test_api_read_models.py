"""GET /api/v1/groups, /groups/<fp>, /queues, /stats and /messages/<id>/body; POST
/api/v1/queues/<name>/enable."""

from console.queues.models import Queue
from tests.browse.conftest import T0, api


def test_groups_are_listed_by_count(seeded, index, personas):
    index.group("g2", count=99, pattern="big")

    body = api(personas["viewer"]).get("/api/v1/groups").json()

    assert [g["fingerprint"] for g in body["results"]] == ["g2", "g1"]
    assert body["results"][1]["states"] == {"NDLV": 3}
    assert (body["results"][1]["ndlv"], body["results"][1]["wait"]) == (3, 0)


def test_groups_are_ranked_by_what_needs_attention_not_by_their_size(seeded, index, personas):
    index.group("mostly-delivered", count=381, states={"DLVD": 380, "NDLV": 1})
    index.group("waiting", count=50, states={"WAIT": 50})
    index.group("resolved", count=900, states={"DLVD": 900})

    body = api(personas["viewer"]).get("/api/v1/groups").json()

    # Quarantined first (g1 has 3), then waiting; a group that needs nobody is left out.
    assert [g["fingerprint"] for g in body["results"]] == ["g1", "mostly-delivered", "waiting"]
    everything = api(personas["viewer"]).get("/api/v1/groups", {"resolved": "true"}).json()
    assert [g["fingerprint"] for g in everything["results"]][-1] == "resolved"


def test_a_group_has_its_sample(seeded, personas):
    body = api(personas["viewer"]).get("/api/v1/groups/g1").json()

    assert body["sample_reason"] == "inventory service unavailable for item 7"
    assert api(personas["viewer"]).get("/api/v1/groups/nope").status_code == 404


def test_queues_have_policy_status_and_counts(seeded, personas):
    Queue.objects.filter(name="orders").update(enabled=False, disabled_reason="R11")

    body = api(personas["viewer"]).get("/api/v1/queues").json()

    (orders,) = body["results"]
    assert orders["name"] == "orders" and orders["enabled"] is False
    assert orders["disabled_reason"] == "R11"
    assert orders["policy"]["max_failed_deliveries"] == 5
    assert orders["counts"] == {"TBDL": 4, "NDLV": 1}
    assert orders["total"] == 5


def test_stats_are_the_dashboards_numbers(seeded, personas):
    body = api(personas["viewer"]).get("/api/v1/stats").json()

    assert body["totals"] == {"TBDL": 4, "NDLV": 1}
    assert body["quarantined"] == 1
    assert body["queues"] == {"orders": {"TBDL": 4, "NDLV": 1}}
    assert body["top_groups"][0]["fingerprint"] == "g1"
    assert sum(h["count"] for h in body["inflow"]) == 1
    assert body["disabled_queues"] == []
    assert body["counts_check"] is None  # never checked


def test_stats_say_what_the_newest_counts_check_found(seeded, personas):
    from django.utils import timezone

    from console.readmodels.models import CountsCheck

    now = timezone.now()
    CountsCheck.objects.create(actor="system", started_at=now, status="clean", finished_at=now)
    CountsCheck.objects.create(
        actor="system", started_at=now, status="drift", finished_at=now, differences=3
    )

    body = api(personas["viewer"]).get("/api/v1/stats").json()

    assert body["counts_check"] | {"finished_at": None} == {
        "status": "drift",
        "finished_at": None,
        "differences": 3,
    }


def test_stats_give_the_hourly_flows_over_the_inflows_hours(seeded, index, personas):
    index.inflow("orders", T0, 7, flow="delivered")
    index.inflow("orders", T0, 2, flow="failed")

    body = api(personas["viewer"]).get("/api/v1/stats").json()

    assert [h["hour"] for h in body["flows"]] == [h["hour"] for h in body["inflow"]]
    last = body["flows"][-1]
    assert last == {
        "hour": "2026-03-01T12:00:00Z",
        "quarantined": 1,
        "released": 0,
        "delivered": 7,
        "failed": 2,
    }


def test_the_body_endpoint_returns_the_bytes(seeded, personas):
    response = api(personas["approver"]).get(f"/api/v1/messages/{seeded}/body")

    assert response.content == b'{"order": 1, "items": [7]}'


def test_enabling_an_enabled_queue_changes_nothing(seeded, personas):
    response = api(personas["admin"]).post("/api/v1/queues/orders/enable")

    assert response.json() == {"name": "orders", "enabled": True, "changed": False}
    assert api(personas["admin"]).post("/api/v1/queues/nope/enable").status_code == 404
