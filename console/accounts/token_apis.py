"""/api/v1/tokens: a service account's API tokens, for administrators (`?user=`), or for the
service account itself (its own, without `?user=`: listed and revoked, never made). A person has
no token (R19): they call the API signed in.

Refusals are {"detail": "<one readable sentence>"}: 400 for input that is not valid (with the
messages by field in "errors"), 401 without credentials, 403 for an account that is not a
service account or not the caller's to manage, 404 for a user or a token that is not there (or
not the caller's to see).
"""

from django.http import Http404
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.accounts.models import NAME_MAX
from console.accounts.tokens import (
    ADMINISTRATORS_ONLY,
    DAYS_MAX,
    MANAGE_SERVICE_TOKENS,
    account_named,
    token_create,
    token_find,
    token_revoke,
    tokens_of,
    tokens_refusal,
)
from console.api import (
    BAD_REQUEST,
    ERRORS,
    NOT_FOUND,
    ErrorSerializer,
    ServiceRefusals,
    answer,
    path_parameter,
    sent,
)


class _TokenSerializer(serializers.Serializer):
    key = serializers.CharField(
        source="token_key", help_text="The token's first characters: its name in the API."
    )
    name = serializers.CharField(help_text="What it is for.")
    user = serializers.CharField(source="user.username", help_text="Whose token it is.")
    created = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(source="expiry", allow_null=True)
    last_used_at = serializers.DateTimeField(
        allow_null=True, help_text="To the minute; null if never used."
    )
    created_by = serializers.SerializerMethodField(
        help_text="Who made it; null when a command did."
    )

    class Meta:
        ref_name = "ApiToken"

    def get_created_by(self, token) -> str | None:
        return token.created_by.username if token.created_by else None


class _CreatedSerializer(_TokenSerializer):
    token = serializers.CharField(
        help_text="The token, for `Authorization: Token <token>`. Shown this once: it is stored "
        "only as a digest."
    )

    class Meta:
        ref_name = "ApiTokenCreated"


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


class _OwnerQuerySerializer(serializers.Serializer):
    user = serializers.CharField(required=False, max_length=150)


_USER_PARAMETER = OpenApiParameter(
    "user",
    str,
    description="Administrators: a service account's user name (the application role). Without "
    "it, the caller's own tokens: a service account's, calling with its token.",
)


class _TokensApi(ServiceRefusals, APIView):
    def _owner(self, request, *, making=False):
        """Whose tokens: the caller's, or those of the account `?user=` names, if they may."""
        query = _OwnerQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        username = query.validated_data.get("user")
        if not username or username == request.user.get_username():
            owner = request.user
        elif not request.user.has_perm(MANAGE_SERVICE_TOKENS):
            # Whoever they name, there or not.
            raise exceptions.PermissionDenied(ADMINISTRATORS_ONLY)
        elif (owner := account_named(username)) is None:
            raise Http404("no such user")
        refusal = tokens_refusal(request.user, owner, making=making)
        if refusal:
            raise exceptions.PermissionDenied(refusal)
        return owner


class TokenListApi(_TokensApi):
    """The API tokens of a service account (`?user=`, administrators; or the service account's
    own), newest first: their keys, never the tokens. POST (administrators) makes one; the
    answer shows the token, once."""

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=NAME_MAX, help_text="What the token is for.")
        days = serializers.IntegerField(
            required=False,
            min_value=1,
            max_value=DAYS_MAX,
            help_text="How long it lasts; API_TOKEN_DAYS (90) by default.",
        )

        class Meta:
            ref_name = "ApiTokenCreate"

    @extend_schema(
        operation_id="tokens_list",
        description="The API tokens of a service account (`?user=`, administrators; without it, "
        "a service account's own), newest first: their keys, names, expiry and last use; never "
        "the tokens themselves. A person's account has none: a token acts only for a service "
        "account (403).",
        parameters=[_USER_PARAMETER],
        responses={
            200: answer(_TokenSerializer(many=True), _TOKEN),
            400: BAD_REQUEST,
            404: NO_USER,
            **ERRORS,
        },
    )
    def get(self, request):
        owner = self._owner(request)
        return Response(_TokenSerializer(tokens_of(owner), many=True).data)

    @extend_schema(
        operation_id="tokens_create",
        description="Make an API token for a service account (administrators, `?user=`): the "
        "answer shows the token this once; only its digest is kept. It lasts `days` "
        "(API_TOKEN_DAYS by default). Never for a person's account, and never by a service "
        "account for itself (403).",
        parameters=[_USER_PARAMETER],
        request=InputSerializer,
        examples=[sent({"name": "shop producer", "days": 90})],
        responses={
            201: answer(
                _CreatedSerializer,
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
    def post(self, request):
        owner = self._owner(request, making=True)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        token, clear = token_create(
            actor=request.user,
            user=owner,
            name=data.validated_data["name"],
            days=data.validated_data.get("days"),
        )
        token.token = clear
        return Response(_CreatedSerializer(token).data, status=status.HTTP_201_CREATED)


class TokenApi(_TokensApi):
    """Revoke a service account's API token, by its key (administrators, or the service account
    itself). It opens nothing from then on; the revocation is in the audit trail."""

    @extend_schema(
        operation_id="tokens_revoke",
        parameters=[path_parameter("key", "The token's key.", "0123456789abcde")],
        responses={204: None, 404: NOT_FOUND, **ERRORS},
    )
    def delete(self, request, key):
        token = token_find(actor=request.user, key=key)
        if token is None or not token_revoke(actor=request.user, token=token):
            raise Http404("no such token")
        return Response(status=status.HTTP_204_NO_CONTENT)
