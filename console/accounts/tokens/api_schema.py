"""The OpenAPI side of /api/v1/tokens: examples and the decorations apis.py applies."""

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema

from console.accounts.tokens.serializers import (
    TokenCreatedSerializer,
    TokenCreateSerializer,
    TokenSerializer,
)
from console.api import (
    BAD_REQUEST,
    ERRORS,
    NOT_FOUND,
    ErrorSerializer,
    answer,
    path_parameter,
    sent,
)

NO_USER = OpenApiResponse(
    ErrorSerializer,
    description="No such user.",
    examples=[OpenApiExample("No such user", value={"detail": "no such user"})],
)
_TOKEN = {
    "key": "4a6fb659f8ed3579",
    "name": "shop producer",
    "user": "shop-producer",
    "created": "2026-11-27T07:30:00.000000Z",
    "expires_at": "2027-02-25T07:30:00.000000Z",
    "last_used_at": "2026-11-27T08:12:00Z",
    "created_by": "admin",
}
_USER_PARAMETER = OpenApiParameter(
    "user",
    str,
    description="Administrators: a service account's user name (the application role). Without "
    "it, the caller's own tokens: a service account's, calling with its token.",
)

tokens_list = extend_schema(
    operation_id="tokens_list",
    description="The API tokens of a service account (`?user=`, administrators; without it, "
    "a service account's own), newest first: their keys, names, expiry and last use; never "
    "the tokens themselves. A person's account has none: a token acts only for a service "
    "account (403).",
    parameters=[_USER_PARAMETER],
    responses={
        200: answer(TokenSerializer(many=True), _TOKEN),
        400: BAD_REQUEST,
        404: NO_USER,
        **ERRORS,
    },
)

tokens_create = extend_schema(
    operation_id="tokens_create",
    description="Make an API token for a service account (administrators, `?user=`): the "
    "answer shows the token this once; only its digest is kept. It lasts `days` "
    "(API_TOKEN_DAYS by default). Never for a person's account, and never by a service "
    "account for itself (403).",
    parameters=[_USER_PARAMETER],
    request=TokenCreateSerializer,
    examples=[sent({"name": "shop producer", "days": 90})],
    responses={
        201: answer(
            TokenCreatedSerializer,
            {
                **_TOKEN,
                "last_used_at": None,
                "token": "4a6fb659f8ed3579c0197b5c569a7af2fa01882a1d25aaf33a44c7f691250bb6",
            },
            "The token, shown this once.",
        ),
        400: BAD_REQUEST,
        404: NO_USER,
        **ERRORS,
    },
)

tokens_revoke = extend_schema(
    operation_id="tokens_revoke",
    parameters=[path_parameter("key", "The token's key.", "0123456789abcde")],
    responses={204: None, 404: NOT_FOUND, **ERRORS},
)
