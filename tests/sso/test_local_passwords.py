"""Issue 34, item 4: local passwords turned off for everyone but the break-glass accounts
(LOCAL_PASSWORDS=false, LOCAL_PASSWORD_USERS), checked on the server; the login page offers
"Sign in with <provider>" and keeps the password form folded for the break-glass administrator."""

import pytest

from console.audit.models import AuditEntry

pytestmark = [pytest.mark.django_db]


def _password_login(client, username):
    return client.post("/login/", {"username": username, "password": f"pw-{username}-1234"})


def test_with_local_passwords_off_an_operator_cannot_sign_in_with_a_password(
    personas, client, settings
):
    settings.LOCAL_PASSWORDS = False
    settings.LOCAL_PASSWORD_USERS = ["admin"]

    answer = _password_login(client, "operator")

    assert answer.status_code == 200  # the login page again, with its error
    assert "_auth_user_id" not in client.session
    assert AuditEntry.objects.filter(action="login.failed", target_id="operator").exists()


def test_with_local_passwords_off_the_break_glass_administrator_still_signs_in(
    personas, client, settings
):
    settings.LOCAL_PASSWORDS = False
    settings.LOCAL_PASSWORD_USERS = ["admin"]

    answer = _password_login(client, "admin")

    assert answer.status_code == 302
    assert client.session["_auth_user_id"] == str(personas["admin"].pk)


def test_with_local_passwords_on_everyone_signs_in_with_their_password(personas, client):
    assert _password_login(client, "operator").status_code == 302


def test_the_login_page_offers_the_provider_and_folds_the_password_form_when_it_is_off(
    client, settings
):
    settings.OIDC_ISSUER = "http://127.0.0.1:9"
    settings.OIDC_PROVIDER_NAME = "Example <SSO>"
    settings.LOCAL_PASSWORDS = False

    page = client.get("/login/?next=/queues/").content.decode()

    assert "Sign in with Example &lt;SSO&gt;" in page
    assert 'href="/sso/oidc/login/?next=/queues/"' in page
    assert '<details id="break-glass-login"' in page


def test_the_login_page_without_a_provider_is_the_password_form_alone(client):
    page = client.get("/login/").content.decode()

    assert "oidc-sign-in" not in page and "break-glass-login" not in page
    assert 'id="login-form"' in page


def test_the_provider_pages_are_not_found_when_no_provider_is_configured(client):
    assert client.get("/sso/oidc/login/").status_code == 404
    assert client.get("/sso/oidc/callback/?code=x&state=y").status_code == 404
