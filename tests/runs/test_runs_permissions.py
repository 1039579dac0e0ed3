"""The runs page and /api/v1/runs, for every role and an anonymous visitor: administrators
only, checked on the server for both (a viewer's role may read delivery runs in the Django
admin's sense, not this operational screen)."""

import pytest
from django.urls import reverse

from tests.api_roles import assert_api_answers
from tests.browse.conftest import api, login
from tests.roles import ROLES, assert_page_answers, who

ALLOWED = {"admin"}


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_the_page_and_the_api_answer_each_role_as_its_permissions_say(world, personas, role):
    user = personas[role] if role else None
    assert_page_answers(login(user).get(reverse("run-list")), role, 200 if role in ALLOWED else 403)
    response = api(user).get("/api/v1/runs")
    if assert_api_answers(response, role, ALLOWED) == 200:
        assert len(response.json()["results"]) == len(world)


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_only_administrators_get_a_page_of_older_runs_too(world, personas, role):
    before = f"delivery:{world['delivered'].id}"
    page = login(personas[role] if role else None).get(reverse("run-list"), {"before": before})
    answer = api(personas[role] if role else None).get("/api/v1/runs", {"before": before})

    assert page.status_code == (200 if role in ALLOWED else 302 if role is None else 403)
    assert answer.status_code == (200 if role in ALLOWED else 401 if role is None else 403)
