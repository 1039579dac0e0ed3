import pytest
from django.test import Client
from django.urls import reverse


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # PBKDF2 at full strength costs a second per user; these tests check who gets which
    # password, not the hasher.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def password_login(username, password, *, ip, url=None, **headers):
    """A login form posted from the address `ip` (the login page, or the form at `url`), with
    request `headers`. Returns (the client, its answer)."""
    client = Client(REMOTE_ADDR=ip, **headers)
    response = client.post(url or reverse("login"), {"username": username, "password": password})
    return client, response


def signed_in(client):
    return "_auth_user_id" in client.session
