"""The token screens: "API tokens" (/account/tokens/) and "Service tokens"
(/account/service-tokens/, administrators)."""

import pytest
from django.contrib.sessions.models import Session
from django.test import Client

from console.accounts.models import ApiToken
from console.accounts.tokens import token_create
from console.audit.models import AuditEntry

MINE = "/account/tokens/"
SERVICE = "/account/service-tokens/"


def _signed_in(user):
    client = Client()
    client.force_login(user)
    return client


def test_the_page_lists_ones_tokens_and_nobody_elses(personas):
    token_create(actor=personas["viewer"], user=personas["viewer"], name="my laptop")
    token_create(actor=personas["operator"], user=personas["operator"], name="their laptop")

    page = _signed_in(personas["viewer"]).get(MINE)

    assert page.status_code == 200
    assert b"my laptop" in page.content
    assert b"their laptop" not in page.content


def test_a_new_token_is_shown_once_in_the_answer_to_the_post(personas):
    client = _signed_in(personas["viewer"])

    made = client.post(MINE, {"name": "nightly export", "days": "30"})
    token = ApiToken.objects.get(name="nightly export")
    shown = made.context["created"][1]
    again = client.get(MINE)

    assert made.status_code == 200
    assert "Copy this token now" in made.content.decode()
    assert shown.startswith(token.token_key)
    assert shown in made.content.decode()
    assert "no-store" in made["Cache-Control"]
    assert shown not in again.content.decode()
    assert token.token_key in again.content.decode()
    for session in Session.objects.all():
        assert shown not in str(session.get_decoded())


def test_a_tokens_name_is_shown_as_text(personas):
    client = _signed_in(personas["viewer"])

    made = client.post(MINE, {"name": "<script>alert(1)</script>", "days": "1"})

    assert b"<script>alert(1)" not in made.content
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in made.content


@pytest.mark.parametrize("days", ["0", "366", "soon"])
def test_days_outside_1_to_365_are_refused_on_the_page(personas, days):
    response = _signed_in(personas["viewer"]).post(MINE, {"name": "x", "days": days})

    assert response.status_code == 400
    assert not ApiToken.objects.exists()


def test_the_revoke_button_revokes_ones_own_token_only(personas):
    viewer, operator = personas["viewer"], personas["operator"]
    mine, _ = token_create(actor=viewer, user=viewer, name="mine")
    theirs, _ = token_create(actor=operator, user=operator, name="theirs")
    client = _signed_in(viewer)

    revoked = client.post(f"/account/tokens/{mine.token_key}/revoke", {"next": MINE})
    refused = client.post(f"/account/tokens/{theirs.token_key}/revoke")

    assert revoked.status_code == 302
    assert revoked["Location"] == MINE
    assert not ApiToken.objects.filter(pk=mine.pk).exists()
    assert refused.status_code == 404
    assert ApiToken.objects.filter(pk=theirs.pk).exists()
    assert client.get(f"/account/tokens/{theirs.token_key}/revoke").status_code == 405
    assert client.post("/account/tokens/a%00b/revoke").status_code == 404


def test_everyone_has_the_api_tokens_link_and_only_admins_the_service_tokens_one(personas):
    for who in ("viewer", "outsider", "admin"):
        page = _signed_in(personas[who]).get(MINE)

        assert b'id="nav-my-tokens"' in page.content
        assert (b'id="nav-service-tokens"' in page.content) == (who == "admin")


@pytest.mark.parametrize("who", ["viewer", "operator", "approver", "auditor", "application"])
def test_only_administrators_open_the_service_tokens_page(personas, who):
    client = _signed_in(personas[who])

    assert client.get(SERVICE).status_code == 403
    assert client.post(
        SERVICE, {"account": "application", "name": "x", "days": "1"}
    ).status_code == (403)
    assert not ApiToken.objects.exists()


def test_an_admin_makes_and_revokes_a_service_accounts_token_on_the_page(personas):
    client = _signed_in(personas["admin"])

    listed = client.get(SERVICE)
    made = client.post(SERVICE, {"account": "application", "name": "billing", "days": "90"})
    token = ApiToken.objects.get(name="billing")
    revoked = client.post(f"/account/tokens/{token.token_key}/revoke", {"next": SERVICE})

    assert listed.status_code == 200
    assert b"application" in listed.content
    assert made.status_code == 200
    assert made.context["created"][1] in made.content.decode()
    assert (token.user, token.created_by) == (personas["application"], personas["admin"])
    assert revoked["Location"] == SERVICE
    assert not ApiToken.objects.exists()
    assert list(
        AuditEntry.objects.filter(action__startswith="token.").values_list("actor", "action")
    ) == [("admin", "token.created"), ("admin", "token.revoked")]


def test_a_person_is_not_among_the_accounts_an_admin_may_choose(personas):
    response = _signed_in(personas["admin"]).post(
        SERVICE, {"account": "operator", "name": "side door", "days": "1"}
    )

    assert response.status_code == 400
    assert not ApiToken.objects.exists()
