"""The dashboard, the failure groups and the queues pages."""

import re
from datetime import timedelta

from django.urls import reverse

from console.browse import counts
from console.delivery.models import DeliveryRun
from console.queues.models import Queue
from console.readmodels.models import FailureGroup
from tests.browse.conftest import T0, login


def _html(response):
    assert response.status_code == 200
    return response.content.decode()


def test_the_dashboard_shows_counts_inflow_and_top_groups(seeded, index, personas):
    index.stats("payments", NDLV=2, FAIL=1)
    index.inflow("payments", T0 - timedelta(hours=3), 4)
    index.group("g2", queue="payments", count=40, pattern="unknown currency <s>")

    html = _html(login(personas["viewer"]).get(reverse("dashboard")))

    card = html[html.index('id="quarantined-count"') :]
    assert re.match(r'id="quarantined-count">\s*<a class="count" data-count="3" ', card)
    counts = html[html.index('id="queue-counts"') :]
    pill = r'{} <span data-live="queue" data-queue="{}" data-state="{}">{}</span>'
    assert re.search(pill.format("NDLV", "payments", "NDLV", 2), counts)
    assert re.search(pill.format("TBDL", "orders", "TBDL", 4), counts)
    chart = html[html.index('<svg id="inflow-chart"') : html.index("</svg>")]
    assert chart.count('<rect class="bar"') == 7 * 24
    assert "2026-03-01 09:00 UTC: 4" in chart and "2026-03-01 12:00 UTC: 1" in chart
    top = html[html.index('id="top-groups"') :]
    assert top.index("unknown currency") < top.index("inventory service")
    assert 'id="disabled-queues"' not in html


def test_an_empty_dashboard_says_there_is_nothing_yet(db, personas):
    html = _html(login(personas["viewer"]).get(reverse("dashboard")))

    assert 'id="no-stats"' in html and 'id="inflow-empty"' in html
    assert "No messages yet." in html


def test_before_the_first_counts_the_dashboard_says_the_first_delivery_is_under_way(
    index, personas
):
    for i in range(3):
        index.ingest(f"m-{i}")
    client = login(personas["viewer"])
    assert "waiting for the first delivery run" in _html(client.get(reverse("dashboard")))

    run = DeliveryRun.objects.create(
        epoch=1, queues=["orders"], started_at=T0, heartbeat_at=T0, worker="spark@host"
    )
    html = _html(client.get(reverse("dashboard")))
    assert "The first delivery is under way" in html
    assert f"3 messages taken in, delivery run {run.id} started" in html

    DeliveryRun.objects.filter(id=run.id).update(status="committed", finished_at=T0)
    assert "The first delivery is done" in _html(client.get(reverse("dashboard")))

    index.stats("orders", NDLV=1)  # the first refresh: the counts replace the note
    html = _html(client.get(reverse("dashboard")))
    assert 'id="no-stats"' not in html and 'id="stats-as-of-line"' in html


def test_the_dashboard_warns_of_disabled_queues(seeded, personas):
    Queue.objects.filter(name="orders").update(enabled=False, disabled_reason="5 failures in a row")

    html = _html(login(personas["viewer"]).get(reverse("dashboard")))

    banner = html[html.index('id="disabled-queues"') :]
    assert "orders" in banner and "5 failures in a row" in banner


def test_the_group_list_is_sorted_by_count(seeded, index, personas):
    index.group("g2", count=40, pattern="second")
    index.group("g3", count=1, pattern="third")

    html = _html(login(personas["viewer"]).get(reverse("group-list")))

    order = re.findall(r'class="group-link" href="/groups/([^/]+)/"', html)
    assert order == ["g2", "g1", "g3"]


def test_the_group_detail_shows_its_messages_a_sample_and_a_browser_link(seeded, personas):
    html = _html(login(personas["viewer"]).get(reverse("group-detail", args=["g1"])))

    assert reverse("message-detail", args=["order-1"]) in html
    assert "inventory service unavailable for item 7" in html
    assert "Traceback (most recent call last)" in html
    assert f'href="{reverse("message-list")}?group=g1"' in html


def test_an_unknown_group_is_404(seeded, personas):
    assert login(personas["viewer"]).get(reverse("group-detail", args=["x"])).status_code == 404


def test_the_queue_list_shows_policy_status_and_counts(seeded, personas):
    Queue.objects.filter(name="orders").update(enabled=False, disabled_reason="R11")

    html = _html(login(personas["viewer"]).get(reverse("queue-list")))

    table = html[html.index('id="queue-table"') :]
    assert "orders" in table and "disabled" in table and "R11" in table
    assert "<dt>failed attempts</dt><dd>after 5 failed attempts, quarantine</dd>" in table
    assert "max_failed_deliveries" not in table
    assert "NDLV 1" in table
    assert reverse("queue-enable", args=["orders"]) not in table  # a viewer may not


def test_reading_the_overview_pages_writes_nothing(seeded, personas, django_assert_max_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = login(personas["admin"])
    client.get(reverse("dashboard"))  # the session is saved on each request (SESSION_SAVE_EVERY)
    for name in ("dashboard", "group-list", "queue-list", "message-list"):
        with CaptureQueriesContext(connection) as queries:
            client.get(reverse(name))
        writes = [
            q["sql"]
            for q in queries.captured_queries
            if q["sql"].split()[0].upper() in ("INSERT", "UPDATE", "DELETE")
            and "django_session" not in q["sql"]
        ]
        assert writes == [], name


def test_the_dashboard_charts_flows_in_and_out_and_deliveries_for_all_queues_or_one(
    seeded, index, personas
):
    index.stats("payments", NDLV=1)
    index.inflow("orders", T0, 5, flow="released")
    index.inflow("orders", T0, 30, flow="delivered")
    index.inflow("payments", T0, 4, flow="failed")
    client = login(personas["viewer"])

    html = _html(client.get(reverse("dashboard")))
    rates = html[
        html.index('id="rates-chart"') : html.index("</figure>", html.index('id="rates-chart"'))
    ]
    assert (
        "delivered: <strong>30</strong>" in rates and "failed attempts: <strong>4</strong>" in rates
    )
    assert "2026-03-01 12:00 UTC: delivered 30, failed attempts 4" in rates
    flows = html[html.index('id="quarantine-flow-chart"') :]
    assert "out of quarantine (decided): <strong>5</strong>" in flows

    only = _html(client.get(reverse("dashboard"), {"queue": "payments", "range": "24h"}))
    rates = only[only.index('id="rates-chart"') :]
    assert (
        "delivered: <strong>0</strong>" in rates and "failed attempts: <strong>4</strong>" in rates
    )
    assert "queue payments" in rates
    assert only.count('<rect class="hour"') == 2 * 24


def test_each_failure_group_has_a_sparkline_of_its_recent_failures(index, personas):
    index.group("g1", last_seen=T0)
    index.group("g2", last_seen=T0 - timedelta(hours=2), pattern="other <n>")
    for i, hours_before in enumerate([0, 0, 1, 30]):  # the last one is older than 24 h
        index.row(f"m-{i}", group_id="g1", last_failure_at=T0 - timedelta(hours=hours_before))
    index.row("m-9", group_id="g2", last_failure_at=T0 - timedelta(hours=2))

    recent = counts.group_recent(groups=list(FailureGroup.objects.order_by("fingerprint")))
    assert recent["g1"][-2:] == [1, 2] and sum(recent["g1"]) == 3
    assert recent["g2"][-3] == 1 and sum(recent["g2"]) == 1

    html = _html(login(personas["viewer"]).get(reverse("group-list")))
    assert html.count('<svg class="sparkline"') == 2
    assert "3 members whose latest failure was in the last 24 hours" in html
