"""The runs page and /api/v1/runs, for every role and an anonymous visitor: administrators
only, checked on the server for both (a viewer's role may read delivery runs in the Django
admin's sense, not this operational screen)."""

import pytest
from django.urls import reverse

from tests.browse.conftest import api, login
from tests.roles import ROLES, assert_page_answers, who

ALLOWED = {"admin"}


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_the_page_answers_each_role_as_its_permissions_say(world, personas, role):
    response = login(personas[role] if role else None).get(reverse("run-list"))

    assert_page_answers(response, role, 200 if role in ALLOWED else 403)


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_the_api_answers_each_role_as_its_permissions_say(world, personas, role):
    response = api(personas[role] if role else None).get("/api/v1/runs")

    expected = 401 if role is None else (200 if role in ALLOWED else 403)
    assert response.status_code == expected, response.content[:300]
    if expected == 200:
        assert len(response.json()["results"]) == len(world)


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_only_administrators_get_a_page_of_older_runs_too(world, personas, role):
    before = f"delivery:{world['delivered'].id}"
    page = login(personas[role] if role else None).get(reverse("run-list"), {"before": before})
    answer = api(personas[role] if role else None).get("/api/v1/runs", {"before": before})

    assert page.status_code == (200 if role in ALLOWED else 302 if role is None else 403)
    assert answer.status_code == (200 if role in ALLOWED else 401 if role is None else 403)
