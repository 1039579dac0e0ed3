"""Every lake query screen and API endpoint, for every role and an anonymous visitor.

Seeing queries: viewer, operator, approver, admin. Running one: operator, approver, admin (a
viewer only looks). A query that searched bodies: only those who read bodies (operator,
approver) see it. Cancelling: the requester (here the operator), or an admin, who may stop any
query. Auditor, application and outsider: none of it. Anonymous: pages send to the login page,
the API answers 401."""

import pytest
from django.urls import reverse

from tests.browse.conftest import api, login
from tests.lakequery.conftest import done_query, result_row
from tests.roles import assert_page_answers, role_matrix

SEE = {"viewer": 200, "operator": 200, "approver": 200, "admin": 200}
BODY = {"operator": 200, "approver": 200}
RUN_PAGE = {"operator": 302, "approver": 302, "admin": 302}
RUN_API = {"operator": 202, "approver": 202, "admin": 202}
CANCEL_PAGE = {"operator": 302, "admin": 302}
CANCEL_API = {"operator": 200, "admin": 200}
CRITERIA = {"states": ["NDLV"]}


@pytest.fixture
def world(db, lake_root, personas):
    from console.lakequery.models import LakeQuery

    done = done_query(personas["operator"], [result_row("m-1")])
    body = done_query(personas["operator"], [result_row("m-2")], criteria={"body_regex": "x"})
    queued = LakeQuery.objects.create(requester=personas["operator"], criteria=CRITERIA)
    return {"done": done.id, "body": body.id, "queued": queued.id}


# (name, method, url(world), data, {role: status}); a role not named gets 403.
PAGES = [
    ("list", "get", lambda w: reverse("lake-query-list"), None, SEE),
    ("run", "post", lambda w: reverse("lake-query-list"), {"states": ["NDLV"]}, RUN_PAGE),
    ("detail", "get", lambda w: reverse("lake-query-detail", args=[w["done"]]), None, SEE),
    (
        "page 2",
        "get",
        lambda w: reverse("lake-query-detail", args=[w["done"]]) + "?after=m-0",
        None,
        SEE,
    ),
    ("body query", "get", lambda w: reverse("lake-query-detail", args=[w["body"]]), None, BODY),
    (
        "cancel",
        "post",
        lambda w: reverse("lake-query-cancel", args=[w["queued"]]),
        None,
        CANCEL_PAGE,
    ),
]
APIS = [
    ("list", "get", lambda w: "/api/v1/lake-queries", None, SEE),
    ("run", "post", lambda w: "/api/v1/lake-queries", CRITERIA, RUN_API),
    ("detail", "get", lambda w: f"/api/v1/lake-queries/{w['done']}", None, SEE),
    ("results", "get", lambda w: f"/api/v1/lake-queries/{w['done']}/results", None, SEE),
    ("body query", "get", lambda w: f"/api/v1/lake-queries/{w['body']}", None, BODY),
    ("body results", "get", lambda w: f"/api/v1/lake-queries/{w['body']}/results", None, BODY),
    ("cancel", "post", lambda w: f"/api/v1/lake-queries/{w['queued']}/cancel", None, CANCEL_API),
]


@role_matrix(("name", "method", "url", "data", "allowed"), PAGES)
def test_each_page_answers_each_role_as_its_permissions_say(
    world, personas, role, name, method, url, data, allowed
):
    client = login(personas[role] if role else None)
    response = getattr(client, method)(url(world), data or {})

    assert_page_answers(response, role, allowed.get(role, 403))


@role_matrix(("name", "method", "url", "data", "allowed"), APIS)
def test_each_api_endpoint_answers_each_role_as_its_permissions_say(
    world, personas, role, name, method, url, data, allowed
):
    client = api(personas[role] if role else None)
    response = getattr(client, method)(url(world), data, format="json")

    expected = 401 if role is None else allowed.get(role, 403)
    assert response.status_code == expected, response.content[:300]


def test_the_nav_links_to_lake_queries_for_those_who_may_see_them(world, personas):
    link = f'href="{reverse("lake-query-list")}"'

    assert link in login(personas["viewer"]).get(reverse("dashboard")).content.decode()
    page = login(personas["auditor"]).get(reverse("audit-list")).content.decode()
    assert link not in page


def test_a_viewer_sees_the_queries_but_no_form(world, personas):
    page = login(personas["viewer"]).get(reverse("lake-query-list")).content.decode()

    assert 'id="lake-query-table"' in page
    assert 'id="lake-query-form"' not in page


def test_body_criteria_are_offered_only_to_who_may_read_bodies(world, personas):
    operator = login(personas["operator"]).get(reverse("lake-query-list")).content.decode()
    admin = login(personas["admin"]).get(reverse("lake-query-list")).content.decode()

    assert 'name="body_contains"' in operator and 'name="json_path"' in operator
    assert 'id="lake-query-form"' in admin
    assert 'name="body_contains"' not in admin and 'name="body_regex"' not in admin


def test_queries_that_searched_bodies_are_listed_only_for_who_may_read_bodies(world, personas):
    def listed(role):
        response = api(personas[role]).get("/api/v1/lake-queries")
        return sorted(q["id"] for q in response.json()["results"])

    assert listed("operator") == sorted(world.values())
    assert listed("viewer") == sorted([world["done"], world["queued"]])
    assert listed("admin") == sorted([world["done"], world["queued"]])
