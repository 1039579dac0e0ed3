"""Where each role lands after signing in (issue 45, point 1): a page that answers them with
something to do, never "Not allowed". The dashboard for those who see messages, the audit trail
for auditors, My account (their roles in words and the API's documentation) for anyone who sees
neither: a person whose role still waits for a second administrator, or a service account's
session."""

import pytest
from django.test import Client
from django.urls import reverse

from tests.roles import ROLES

# What each role's first page says, in its heading.
LANDING = {
    "viewer": ("dashboard", "<h1>Dashboard</h1>"),
    "operator": ("dashboard", "<h1>Dashboard</h1>"),
    "approver": ("dashboard", "<h1>Dashboard</h1>"),
    "admin": ("dashboard", "<h1>Dashboard</h1>"),
    "auditor": ("audit-list", "<h1>Audit trail</h1>"),
    "application": ("my-account", "<h1>My account</h1>"),
    "outsider": ("my-account", "<h1>My account</h1>"),
}


def test_every_role_has_a_landing_page():
    assert set(LANDING) == {role for role in ROLES if role is not None}


def _landed(client):
    """Where the login page sends a signed-in visitor, and that page."""
    sent = client.get(reverse("login"))
    assert sent.status_code == 302
    return sent["Location"], client.get(sent["Location"])


@pytest.mark.parametrize("role", sorted(LANDING))
def test_each_role_lands_on_a_page_that_answers_it(personas, role):
    client = Client()
    client.force_login(personas[role])

    where, page = _landed(client)

    url_name, heading = LANDING[role]
    assert where == reverse(url_name)
    assert page.status_code == 200, page.content[:300]
    assert heading in page.content.decode()


@pytest.mark.parametrize("role", ["viewer", "operator", "approver", "admin", "auditor"])
def test_a_password_sign_in_lands_each_person_on_their_page(personas, role):
    client = Client()
    signed_in = client.post(
        reverse("login"), {"username": role, "password": f"pw-{role}-1234"}, follow=True
    )

    assert signed_in.status_code == 200
    assert signed_in.redirect_chain[-1][0] == reverse(LANDING[role][0])
    assert LANDING[role][1] in signed_in.content.decode()


def test_a_service_account_lands_on_what_its_role_is_for_and_the_api_docs(personas):
    client = Client()
    client.force_login(personas["application"])

    _, page = _landed(client)

    text = page.content.decode()
    assert 'data-role="application"' in text
    # What the role lets it do, in words (send messages, the poison list), and where the API is.
    assert "poison list" in text
    assert f'href="{reverse("api-docs")}"' in text
    assert "Not allowed" not in text


def test_a_service_account_cannot_sign_in_with_a_password(personas):
    client = Client()
    refused = client.post(reverse("login"), {"username": "application", "password": ""})

    assert refused.status_code == 200
    assert "_auth_user_id" not in client.session


def test_someone_whose_role_waits_lands_on_my_account_that_says_they_hold_none(personas):
    client = Client()
    signed_in = client.post(
        reverse("login"), {"username": "outsider", "password": "pw-outsider-1234"}, follow=True
    )

    assert signed_in.redirect_chain[-1][0] == reverse("my-account")
    assert 'id="account-no-roles"' in signed_in.content.decode()
