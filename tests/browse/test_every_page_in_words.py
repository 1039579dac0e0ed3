"""Every page of the console, as every role sees it, speaks in words: no command line
("manage.py") and no permission codename ("ingest.add_messagekey"). The pages are found from the
URL configuration, so a page added later is walked too (and fails here until its id is known)."""

import re

import pytest
from django.contrib.auth.models import Group
from django.urls import URLResolver, get_resolver

from console.access.services import role_grant_request
from console.accounts.roles import ROLE_PERMISSIONS
from console.decisions.services import Action, action_request_create
from console.rules.services import rule_propose
from tests.broker_sources import orders_dlq
from tests.browse.conftest import login

# What each path parameter of a page is filled with: objects the `world` fixture makes.
ARGUMENTS = {
    "message_id": "order-1",
    "fingerprint": "g1",
    "name": "orders",
    "queue": "orders",
    "key": "no-such-token",
    "grant_id": None,  # the world's grant
    "request_id": None,  # the world's request
    "query_id": 1,
    "delivery_id": 1,
    "webhook_id": 1,
    "filter_id": 1,
    "rule_id": None,  # the world's standing rule
}
# Not the console's pages: the REST API (JSON), Django's own admin, the OpenAPI document.
NOT_PAGES = ("api/v1/", "admin/", "api/schema/")
ROLES = ("viewer", "operator", "approver", "admin", "auditor", "application", "outsider")
CODENAMES = sorted({name for names in ROLE_PERMISSIONS.values() for name in names})
_PARAM = re.compile(r"<(?:\w+:)?(\w+)>")


def _routes(patterns, prefix=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _routes(p.url_patterns, prefix + str(p.pattern))
        else:
            yield prefix + str(p.pattern)


def _pages(arguments):
    paths = []
    for route in _routes(get_resolver().url_patterns):
        if route.startswith(NOT_PAGES):
            continue
        unknown = set(_PARAM.findall(route)) - set(arguments)
        assert not unknown, f"{route}: add {sorted(unknown)} to ARGUMENTS"
        paths.append("/" + _PARAM.sub(lambda m: str(arguments[m.group(1)]), route))
    return sorted(set(paths))


@pytest.fixture
def world(seeded, personas):
    grant = role_grant_request(
        actor=personas["admin"],
        user=personas["viewer"],
        role=Group.objects.get(name="approver"),
        comment="covers for Bob",
    )
    request = action_request_create(
        actor=personas["operator"],
        scope={"kind": "selection", "ids": ["order-1"]},
        action=Action(kind="reprocess"),
        comment="fixed the handler",
    )
    # A broker source whose consumer is not running: the queues page says what that means.
    orders_dlq("ORDERS_BROKER_URL", "orders.dlq", state="consuming")
    rule = rule_propose(
        actor=personas["admin"],
        name="old-orders",
        kind="archive",
        comment="a month is enough",
        params={"queue": "orders", "group": "g1", "days": 30},
    )
    return {**ARGUMENTS, "grant_id": grant.id, "request_id": request.id, "rule_id": rule.id}


def _offending(text):
    said = []
    if "manage.py" in text:
        said.append("manage.py")
    said += [name for name in CODENAMES if name in text]
    return said


@pytest.mark.parametrize("role", ROLES)
def test_no_page_shows_a_command_line_or_a_permission_codename(world, personas, role):
    client = login(personas[role])
    seen, wrong = 0, {}
    for path in _pages(world):
        response = client.get(path)
        if not response.get("Content-Type", "").startswith("text/html"):
            continue  # a redirect, an export, a raw body: not a page people read
        seen += 1
        text = response.content.decode()
        if found := _offending(text):
            wrong[path] = found

    assert seen > 0
    assert not wrong, wrong


def test_the_walk_reaches_the_pages_that_name_permissions(world, personas):
    """The grant page lists what a role gives; the walk must reach it, rendered."""
    pages = _pages(world)
    grant = f"/role-grants/{world['grant_id']}/"
    assert grant in pages

    page = login(personas["admin"]).get(grant).content.decode()

    assert "approving action requests" in page
    assert "decisions.approve_actionrequest" not in page


def test_a_source_whose_consumer_is_not_running_says_so_in_words(world, personas):
    page = login(personas["admin"]).get("/queues/").content.decode()

    assert "its consumer is not running" in page
    assert "consume_rabbitmq" not in page
