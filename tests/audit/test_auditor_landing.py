"""An auditor, who may read the audit trail but not the quarantine, lands on it after logging in;
everyone who sees the quarantine lands on the dashboard; a ?next= wins over both."""

import pytest
from django.urls import reverse

from tests.browse.conftest import login


def _log_in(client, role, **extra):
    return client.post(reverse("login"), {"username": role, "password": f"pw-{role}-1234", **extra})


def test_an_auditor_lands_on_the_audit_trail(personas):
    client = login()

    response = _log_in(client, "auditor")

    assert response.status_code == 302
    assert response["Location"] == reverse("audit-list")
    assert client.get(response["Location"]).status_code == 200


@pytest.mark.parametrize("role", ["viewer", "operator", "approver", "admin"])
def test_everyone_else_lands_on_the_dashboard(personas, role):
    response = _log_in(login(), role)

    assert response["Location"] == reverse("dashboard")


def test_a_next_page_wins_over_the_landing_page(personas):
    response = _log_in(login(), "auditor", next="/audit/?action=login")

    assert response["Location"] == "/audit/?action=login"


def test_a_next_page_on_another_site_is_ignored(personas):
    response = _log_in(login(), "auditor", next="https://evil.example/")

    assert response["Location"] == reverse("audit-list")


def test_a_signed_in_auditor_who_opens_the_login_page_is_sent_to_the_audit_trail(personas):
    response = login(personas["auditor"]).get(reverse("login"))

    assert response["Location"] == reverse("audit-list")


def test_an_auditor_who_also_holds_a_quarantine_role_lands_on_the_dashboard(personas):
    from django.contrib.auth.models import Group

    personas["auditor"].groups.add(Group.objects.get(name="viewer"))

    response = _log_in(login(), "auditor")

    assert response["Location"] == reverse("dashboard")
