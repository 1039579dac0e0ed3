"""/api/v1/account: the caller's own account (user name, e-mail address, roles with where each
came from and what each lets one do, in words); PATCH sets the e-mail address alerts go to.

Refusals are {"detail": "<one readable sentence>"}: 400 for an address that is not one, 401
without credentials."""

from rest_framework.response import Response
from rest_framework.views import APIView

from console.accounts.profile import api_schema
from console.accounts.profile.serializers import AccountSerializer, AccountUpdateSerializer
from console.accounts.profile.services import account_email_set
from console.api import ServiceRefusals


class AccountApi(ServiceRefusals, APIView):
    """The caller's own account; PATCH sets its e-mail address."""

    @api_schema.account_read
    def get(self, request):
        return Response(AccountSerializer(request.user).data)

    @api_schema.account_update
    def patch(self, request):
        data = AccountUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        account_email_set(actor=request.user, email=data.validated_data["email"])
        return Response(AccountSerializer(request.user).data)
