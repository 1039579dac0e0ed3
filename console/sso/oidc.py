"""The OpenID Connect client: Authlib's, configured from the settings. Authlib does the protocol
(discovery, the authorization code with PKCE and a nonce, the ID token's signature against the
provider's published keys, its issuer, audience and times); this module only says which provider
and reads the claims Antidote uses."""

from dataclasses import dataclass

from authlib.integrations.django_client import OAuth
from django.conf import settings

_clients = {}


def oidc_enabled():
    return bool(settings.OIDC_ISSUER)


def oidc_client():
    """Authlib's client for the configured provider: one per configuration, so that the
    provider's metadata and keys, read once, are kept between requests."""
    key = (
        settings.OIDC_ISSUER,
        settings.OIDC_CLIENT_ID,
        settings.OIDC_CLIENT_SECRET,
        settings.OIDC_SCOPES,
        settings.OIDC_TIMEOUT_SECONDS,
    )
    if key not in _clients:
        oauth = OAuth()
        _clients[key] = oauth.register(
            name="oidc",
            client_id=settings.OIDC_CLIENT_ID,
            client_secret=settings.OIDC_CLIENT_SECRET,
            server_metadata_url=f"{settings.OIDC_ISSUER}/.well-known/openid-configuration",
            client_kwargs={
                "scope": settings.OIDC_SCOPES,
                "code_challenge_method": "S256",
                "default_timeout": settings.OIDC_TIMEOUT_SECONDS,
            },
        )
    return _clients[key]


@dataclass(frozen=True)
class Claims:
    """What a provider says about a person, as Antidote uses it."""

    subject: str
    username: str
    email: str
    first_name: str
    last_name: str
    groups: tuple


def _text(value, limit):
    return str(value or "").strip()[:limit]


def claims_read(claims):
    """Claims from an ID token's (or the userinfo's) claims. The user name is
    OIDC_USERNAME_CLAIM's, else the e-mail address, else the subject; an e-mail address the
    provider says it has not verified is not taken."""
    subject = _text(claims.get("sub"), 255)
    email = "" if claims.get("email_verified") is False else _text(claims.get("email"), 254)
    username = _text(claims.get(settings.OIDC_USERNAME_CLAIM), 150) or email[:150] or subject
    first, last = _text(claims.get("given_name"), 150), _text(claims.get("family_name"), 150)
    if not (first or last) and claims.get("name"):
        first, _, last = _text(claims.get("name"), 301).partition(" ")
    groups = claims.get(settings.OIDC_GROUPS_CLAIM) or []
    if isinstance(groups, str):
        groups = [groups]
    return Claims(
        subject=subject,
        username=username,
        email=email,
        first_name=first[:150],
        last_name=last[:150],
        groups=tuple(str(g) for g in groups if isinstance(g, str | int)),
    )


def id_token_claims(token, nonce):
    """The claims of `token`'s ID token, checked by Authlib against the provider's keys, the
    issuer, this client as its audience, its times (OIDC_LEEWAY_SECONDS of skew) and `nonce`.
    Raises Authlib's (joserfc's) errors for a token that fails any check."""
    client = oidc_client()
    return client.parse_id_token(token, nonce=nonce, leeway=settings.OIDC_LEEWAY_SECONDS)
