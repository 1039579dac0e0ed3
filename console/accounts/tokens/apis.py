"""/api/v1/tokens: a service account's API tokens, for administrators (`?user=`), or for the
service account itself (its own, without `?user=`: listed and revoked, never made). A person has
no token (R19): they call the API signed in.

Refusals are {"detail": "<one readable sentence>"}: 400 for input that is not valid (with the
messages by field in "errors"), 401 without credentials, 403 for an account that is not a
service account or not the caller's to manage, 404 for a user or a token that is not there (or
not the caller's to see).
"""

from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.accounts.tokens import api_schema
from console.accounts.tokens.selectors import (
    ADMINISTRATORS_ONLY,
    MANAGE_SERVICE_TOKENS,
    account_named,
    token_find,
    tokens_of,
    tokens_refusal,
)
from console.accounts.tokens.serializers import (
    OwnerQuerySerializer,
    TokenCreatedSerializer,
    TokenCreateSerializer,
    TokenSerializer,
)
from console.accounts.tokens.services import token_create, token_revoke
from console.api import ServiceRefusals


class _TokensApi(ServiceRefusals, APIView):
    def _owner(self, request, *, making=False):
        """Whose tokens: the caller's, or those of the account `?user=` names, if they may."""
        query = OwnerQuerySerializer(data=request.query_params)
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

    @api_schema.tokens_list
    def get(self, request):
        owner = self._owner(request)
        return Response(TokenSerializer(tokens_of(owner), many=True).data)

    @api_schema.tokens_create
    def post(self, request):
        owner = self._owner(request, making=True)
        data = TokenCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        token, clear = token_create(
            actor=request.user,
            user=owner,
            name=data.validated_data["name"],
            days=data.validated_data.get("days"),
        )
        token.token = clear
        return Response(TokenCreatedSerializer(token).data, status=status.HTTP_201_CREATED)


class TokenApi(_TokensApi):
    """Revoke a service account's API token, by its key (administrators, or the service account
    itself). It opens nothing from then on; the revocation is in the audit trail."""

    @api_schema.tokens_revoke
    def delete(self, request, key):
        token = token_find(actor=request.user, key=key)
        if token is None or not token_revoke(actor=request.user, token=token):
            raise Http404("no such token")
        return Response(status=status.HTTP_204_NO_CONTENT)
