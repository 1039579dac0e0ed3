"""The OpenAPI side of /api/v1/account: an example and the decorations apis.py applies."""

from drf_spectacular.utils import extend_schema

from console.accounts.profile.serializers import AccountSerializer, AccountUpdateSerializer
from console.api import BAD_REQUEST, ERRORS, answer, sent

_ACCOUNT = {
    "username": "operator",
    "name": "",
    "email": "operator@example.com",
    "roles": [
        {
            "name": "operator",
            "granted_by": "admin",
            "confirmed_by": "admin2",
            "granted_at": "2026-11-27T07:30:00Z",
            "provider": None,
            "groups": [],
            "permissions": ["reading message bodies", "asking for decisions"],
        }
    ],
}

account_read = extend_schema(
    operation_id="account_read",
    description="The caller's account: user name, name, e-mail address, and each role with "
    "where it came from and what it lets one do, in words.",
    responses={200: answer(AccountSerializer, _ACCOUNT), **ERRORS},
)

account_update = extend_schema(
    operation_id="account_update",
    description="Set the caller's e-mail address (audited as account.email_changed).",
    request=AccountUpdateSerializer,
    examples=[sent({"email": "operator@example.com"})],
    responses={200: answer(AccountSerializer, _ACCOUNT), 400: BAD_REQUEST, **ERRORS},
)
