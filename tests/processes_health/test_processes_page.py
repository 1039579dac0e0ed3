"""The Processes page and /api/v1/processes: each process alive, stale or stopped with its host,
pid, start, heartbeat and current work; the broker sources' consumer threads; the dashboard's
warning when a kind has no alive process. Administrators only, as the Runs page."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils.html import escape

from console.processes.selectors import process_heartbeat_ages
from console.queues.models import Queue
from tests.api_roles import assert_api_answers
from tests.broker_sources import orders_dlq
from tests.browse.conftest import api, login
from tests.processes_health.conftest import HOST, HOSTILE
from tests.roles import ROLES, assert_page_answers, who

ALLOWED = {"admin"}
URL = reverse("process-list")


@pytest.fixture
def world(beats, settings):
    settings.HEARTBEAT_SECONDS = 10
    settings.HEARTBEAT_STALE_SECONDS = 30
    beats.process("web", pid=11, beat=timedelta(seconds=1))
    beats.process("spark", pid=22, beat=timedelta(minutes=2), current="delivery run orders")
    beats.process("worker", pid=33, beat=timedelta(seconds=4), current=HOSTILE)
    beats.process("beat", pid=44, beat=timedelta(minutes=1), stopped=timedelta(minutes=1))
    return beats


@pytest.fixture(autouse=True)
def _clock_stands_still(request, time_machine):
    """Once the world's beats are made, the clock stands at the moment they were made from: the
    page's ages ("1 s ago") are theirs exactly, however long a busy machine takes to render it."""
    if "world" in request.fixturenames:
        time_machine.move_to(request.getfixturevalue("world").now, tick=False)


def _row(page, pid):
    found = re.search(rf'<tr class="([^"]*)"[^>]* data-pid="{pid}">(.*?)</tr>', page, re.S)
    assert found, f"pid {pid} is not listed"
    return found[1], found[2]


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_the_page_and_the_api_answer_each_role_as_its_permissions_say(world, personas, role):
    user = personas[role] if role else None
    assert_page_answers(login(user).get(URL), role, 200 if role in ALLOWED else 403)
    assert_api_answers(api(user).get("/api/v1/processes"), role, ALLOWED)


def test_the_page_lists_each_process_alive_stale_or_stopped(world, personas):
    page = login(personas["admin"]).get(URL).content.decode()

    classes, web = _row(page, 11)
    assert "state-alive" in classes and HOST in web and re.search(r"\b[1-3] s ago", web)
    classes, spark = _row(page, 22)
    assert "state-stale" in classes and re.search(r"2 min [0-3] s ago", spark)
    assert "delivery run orders" in spark
    classes, _ = _row(page, 44)
    assert "state-stopped" in classes
    # The spark worker is stale and beat stopped: the page says what that means.
    assert 'id="missing-spark"' in page and 'id="missing-beat"' in page
    assert re.search(r"No spark worker has reported for 2 min [0-3] s:", page)
    assert 'id="missing-worker"' not in page


def test_current_work_reaches_the_page_as_text(world, personas):
    page = login(personas["admin"]).get(URL).content.decode()

    _, worker = _row(page, 33)
    assert HOSTILE not in page
    assert escape(HOSTILE) in worker


def test_the_api_lists_the_processes_their_ages_and_what_is_missing(world, personas):
    body = api(personas["admin"]).get("/api/v1/processes").json()

    by_pid = {p["pid"]: p for p in body["results"]}
    assert [p["kind"] for p in body["results"]] == ["web", "spark", "worker", "beat"]
    assert by_pid[22]["state"] == "stale" and by_pid[22]["current"] == "delivery run orders"
    assert 119 <= by_pid[22]["heartbeat_age_seconds"] <= 130
    assert by_pid[44]["state"] == "stopped" and by_pid[44]["stopped_at"]
    assert by_pid[33]["current"] == HOSTILE  # JSON: the client escapes it
    assert [m["kind"] for m in body["missing"]] == ["spark", "beat"]
    assert body["stale_seconds"] == 30


def test_each_broker_source_is_listed_under_the_consumer(world, personas):
    world.process("sources", pid=55, beat=timedelta(seconds=2))
    orders_dlq(
        "ORDERS_BROKER_URL",
        "orders.dlq",
        queue=Queue.objects.create(name="orders-dead", handler="workers.demo.handlers.ok"),
        state="consuming",
        heartbeat_at=world.now,
        connected_to="RabbitMQ at rabbit:5672, vhost '/'",
    )

    page = login(personas["admin"]).get(URL).content.decode()
    body = api(personas["admin"]).get("/api/v1/processes").json()

    row = re.search(r'<tr class="consumer-row" data-source="orders-dlq">(.*?)</tr>', page, re.S)
    assert row and "consuming" in row[1] and "orders-dead" in row[1]
    assert body["consumers"][0]["name"] == "orders-dlq"
    assert body["consumers"][0]["state"] == "consuming"


def test_the_heartbeat_ages_are_there_for_metrics(world):
    ages = process_heartbeat_ages(now=world.now)

    assert set(ages) == {("web", HOST, 11), ("spark", HOST, 22), ("worker", HOST, 33)}
    assert ages["spark", HOST, 22] == 120.0


def test_the_dashboard_warns_of_a_kind_with_no_alive_process(world, personas, settings):
    page = login(personas["viewer"]).get(reverse("dashboard")).content.decode()

    warning = re.search(r'<li class="process-missing" id="missing-spark">(.*?)</li>', page, re.S)
    assert warning, "no warning about the spark worker"
    assert re.fullmatch(
        r"No spark worker has reported for 2 min [0-3] s: deliveries, refreshes and decisions "
        r"are not running\. Start the Procfile&#x27;s spark process\.",
        warning[1],
    )
    # Only those who may see the Processes page get a link to it.
    assert reverse("process-list") not in warning[1]
    assert 'id="missing-web"' not in page


def test_the_dashboard_says_nothing_when_every_kind_is_alive(all_alive, personas):
    page = login(personas["admin"]).get(reverse("dashboard")).content.decode()

    assert 'id="processes-missing"' not in page


def test_the_nav_links_the_page_for_those_who_may_see_it(world, personas):
    assert 'id="nav-processes"' in login(personas["admin"]).get(URL).content.decode()
    dashboard = login(personas["viewer"]).get(reverse("dashboard")).content.decode()
    assert 'id="nav-processes"' not in dashboard
