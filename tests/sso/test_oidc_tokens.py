"""Issue 34: a tampered or expired ID token is refused. The tokens are the real provider's (one
it issued at a sign-in, then changed), or signed with its own key (the test gave it that key):
console.sso.oidc.id_token_claims checks them as the callback does."""

import json
import time

import pytest
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import RSAKey
from joserfc.util import urlsafe_b64decode, urlsafe_b64encode

from console.sso.oidc import id_token_claims
from tests.sso.provider import CLIENT_ID

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def issued(personas, person):
    """An ID token the provider issued at a real sign-in, and its nonce."""
    person.op.person("dana", groups=["ops"])
    person.sign_in("dana")
    token = person.client.session["sso_id_token"]
    payload = json.loads(urlsafe_b64decode(token.split(".")[1].encode()))
    return token, payload


def _claims(id_token, nonce):
    return id_token_claims({"id_token": id_token, "access_token": "unused"}, nonce)


def _signed(op, claims, key=None):
    key = key or op.key
    return jwt.encode({"alg": "RS256", "kid": key.kid}, claims, key)


def test_the_providers_own_token_is_taken(issued):
    token, payload = issued

    assert _claims(token, payload["nonce"])["sub"] == "dana"


def test_a_token_whose_claims_were_changed_is_refused(issued):
    token, payload = issued
    header, _, signature = token.split(".")
    forged = {**payload, "groups": ["platform"]}
    body = urlsafe_b64encode(json.dumps(forged).encode()).decode().rstrip("=")

    with pytest.raises(JoseError):
        _claims(f"{header}.{body}.{signature}", payload["nonce"])


def test_an_expired_token_signed_with_the_providers_key_is_refused(issued, person, settings):
    _, payload = issued
    now = int(time.time())
    late = now - settings.OIDC_LEEWAY_SECONDS - 60
    expired = _signed(person.op, {**payload, "iat": late - 600, "exp": late})

    with pytest.raises(JoseError, match="expired"):
        _claims(expired, payload["nonce"])


def test_a_token_signed_with_another_key_is_refused(issued, person):
    _, payload = issued
    stranger = RSAKey.generate_key(2048, parameters={"kid": person.op.key.kid})

    with pytest.raises(JoseError):
        _claims(_signed(person.op, payload, stranger), payload["nonce"])


def test_a_token_for_another_client_or_with_another_nonce_is_refused(issued, person):
    _, payload = issued

    with pytest.raises(JoseError):
        _claims(_signed(person.op, {**payload, "aud": "someone-else"}), payload["nonce"])
    with pytest.raises(JoseError):
        _claims(_signed(person.op, payload), "another-nonce")
    assert payload["aud"] == CLIENT_ID
