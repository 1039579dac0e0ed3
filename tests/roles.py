"""The roles a test asks a screen or an endpoint about: one persona per role, an outsider with no
role, and an anonymous visitor (None)."""

import pytest
from django.urls import reverse

ROLES = ("viewer", "operator", "approver", "admin", "auditor", "application", "outsider", None)


def who(role):
    """A persona's name in a test id."""
    return role or "anonymous"


def role_matrix(argnames, cases):
    """A test of each case (its id: its first item, a name) for each role and the anonymous
    visitor: a screen's or an endpoint's answers, role by role."""

    def matrix(test):
        by_case = pytest.mark.parametrize(argnames, cases, ids=[case[0] for case in cases])
        return pytest.mark.parametrize("role", ROLES, ids=who)(by_case(test))

    return matrix


def assert_page_answers(response, role, status):
    """A page sends an anonymous visitor to log in first, and answers `role` with `status`."""
    if role is None:
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login") + "?next=")
    else:
        assert response.status_code == status, response.content[:300]
