"""`Authorization: Token <token>` for the API: knox's header and hashing, with our rules on top."""

from datetime import timedelta
from hmac import compare_digest

from django.db.models import Q
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from knox.auth import TokenAuthentication
from knox.crypto import hash_token
from knox.settings import CONSTANTS
from rest_framework import exceptions

from console.access.service_accounts import is_service_account
from console.accounts.models import ApiToken
from console.accounts.tokens.services import token_expire

# A busy client calls many times a minute: its token's last use is written at most once a minute.
LAST_USED_EVERY = timedelta(minutes=1)


class ApiTokenAuthentication(TokenAuthentication):
    """Knox's, except that:

    - the expiry is checked only once the token is known to be the caller's (the digest matches):
      knox checks it first, so anyone who read a key on a screen could have an expired token
      deleted in its owner's name;
    - an expired token is deleted and its expiry audited, once however many calls race;
    - a token acts only for a service account (R19), asked at every call: the account's rights
      are read now, so a role taken away, a password set or a deactivation counts at once, and
      a token of a person's account (made before that rule) opens nothing;
    - a token's last use is recorded, at most once a minute, with one UPDATE;
    - a token that is not printable ASCII is refused (knox would fail on one that is not UTF-8,
      and PostgreSQL on a NUL character).
    """

    def authenticate_credentials(self, token):
        try:
            token = token.decode("utf-8")
        except UnicodeDecodeError:
            token = ""
        if not (token.isascii() and token.isprintable()):
            raise exceptions.AuthenticationFailed("Invalid token.")
        digest = hash_token(token)
        candidates = ApiToken.objects.filter(
            token_key=token[: CONSTANTS.TOKEN_KEY_LENGTH]
        ).select_related("user")
        for api_token in candidates:
            if compare_digest(digest, api_token.digest):
                return self._accepted(api_token)
        raise exceptions.AuthenticationFailed("Invalid token.")

    def _accepted(self, api_token):
        now = timezone.now()
        if api_token.expiry is not None and api_token.expiry <= now:
            token_expire(token=api_token)
            raise exceptions.AuthenticationFailed("Token expired.")
        user, api_token = self.validate_user(api_token)  # refuses an inactive user
        if not is_service_account(user):
            raise exceptions.AuthenticationFailed(
                "this token's account is not a service account: a token acts only for a "
                "service account (the application role alone); a person signs in instead"
            )
        if api_token.last_used_at is None or api_token.last_used_at <= now - LAST_USED_EVERY:
            # Conditional, so that of the calls racing in the same minute only one writes.
            ApiToken.objects.filter(digest=api_token.digest).filter(
                Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - LAST_USED_EVERY)
            ).update(last_used_at=now)
            api_token.last_used_at = now
        return user, api_token


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """The token in the OpenAPI document, under the name DRF's token scheme had there, so that
    the docs page and generated clients keep sending `Authorization: Token <key>`."""

    target_class = ApiTokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": 'An API token, with the prefix "Token": `Authorization: Token <key>`.',
        }
