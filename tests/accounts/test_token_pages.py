"""The token screen, "Service tokens" (/account/service-tokens/, administrators): the service
accounts' tokens, and new service accounts. A person has no page of their own tokens (R19)."""

import pytest
from django.contrib.sessions.models import Session
from django.test import Client

from console.accounts.models import ApiToken
from console.accounts.tokens.services import token_create
from console.audit.models import AuditEntry

SERVICE = "/account/service-tokens/"


def _signed_in(user):
    client = Client()
    client.force_login(user)
    return client


def test_a_new_token_is_shown_once_in_the_answer_to_the_post(personas):
    client = _signed_in(personas["admin"])

    made = client.post(SERVICE, {"account": "application", "name": "nightly export", "days": "30"})
    token = ApiToken.objects.get(name="nightly export")
    shown = made.context["created"][1]
    again = client.get(SERVICE)

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
    client = _signed_in(personas["admin"])

    made = client.post(
        SERVICE, {"account": "application", "name": "<script>alert(1)</script>", "days": "1"}
    )

    assert b"<script>alert(1)" not in made.content
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in made.content


@pytest.mark.parametrize("days", ["0", "366", "soon"])
def test_days_outside_1_to_365_are_refused_on_the_page(personas, days):
    response = _signed_in(personas["admin"]).post(
        SERVICE, {"account": "application", "name": "x", "days": days}
    )

    assert response.status_code == 400
    assert not ApiToken.objects.exists()


def test_the_revoke_button_revokes_a_service_accounts_token_for_an_admin_only(personas):
    token, _ = token_create(actor=personas["admin"], user=personas["application"], name="feed")
    viewer = _signed_in(personas["viewer"])

    refused = viewer.post(f"/account/tokens/{token.token_key}/revoke")
    revoked = _signed_in(personas["admin"]).post(
        f"/account/tokens/{token.token_key}/revoke", {"next": SERVICE}
    )

    assert refused.status_code == 404
    assert revoked.status_code == 302
    assert revoked["Location"] == SERVICE
    assert not ApiToken.objects.filter(pk=token.pk).exists()
    assert viewer.get(f"/account/tokens/{token.token_key}/revoke").status_code == 405
    assert viewer.post("/account/tokens/a%00b/revoke").status_code == 404


def test_nobody_has_a_page_of_their_own_tokens_and_only_admins_the_service_tokens_link(personas):
    for who in ("viewer", "outsider", "admin"):
        page = _signed_in(personas[who]).get("/account/")

        assert _signed_in(personas[who]).get("/account/tokens/").status_code == 404
        assert b'id="nav-my-tokens"' not in page.content
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


def test_a_new_service_account_has_no_password_and_waits_for_a_second_administrator(
    personas, django_user_model
):
    from console.access.models import RoleGrant

    client = _signed_in(personas["admin"])

    made = client.post(
        "/account/service-accounts/new", {"username": "shop-producer", "comment": "the shop"}
    )

    account = django_user_model.objects.get(username="shop-producer")
    grant = RoleGrant.objects.get(user=account)
    assert made.status_code == 302 and made["Location"] == f"/role-grants/{grant.id}/"
    assert not account.has_usable_password()
    assert list(account.groups.all()) == []
    assert (grant.status, grant.role.name, grant.requested_by) == (
        "pending",
        "application",
        personas["admin"],
    )
    # Not a service account until a second administrator confirms: no token for it yet.
    refused = client.post(SERVICE, {"account": "shop-producer", "name": "x", "days": "1"})
    assert refused.status_code == 400
    assert not ApiToken.objects.exists()


def test_a_service_account_needs_a_free_valid_name(personas):
    client = _signed_in(personas["admin"])

    taken = client.post("/account/service-accounts/new", {"username": "operator"})
    bad = client.post("/account/service-accounts/new", {"username": "no spaces here"})

    assert taken.status_code == 400 and "already exists" in taken.content.decode()
    assert bad.status_code == 400
