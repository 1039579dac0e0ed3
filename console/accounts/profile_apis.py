"""/api/v1/account: the caller's own account (user name, e-mail address, roles with where each
came from and what each lets one do, in words); PATCH sets the e-mail address alerts go to.

Refusals are {"detail": "<one readable sentence>"}: 400 for an address that is not one, 401
without credentials."""

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from console.accounts.profile import EMAIL_MAX, account_email_set, account_roles
from console.api import BAD_REQUEST, ERRORS, ServiceRefusals, answer, sent


class _RoleSerializer(serializers.Serializer):
    name = serializers.CharField()
    granted_by = serializers.CharField(
        allow_null=True,
        help_text="The administrator who granted it, when it needed a second one's "
        "confirmation; null for a role given without one.",
    )
    confirmed_by = serializers.CharField(
        allow_null=True, help_text="The second administrator, who confirmed it."
    )
    granted_at = serializers.DateTimeField(allow_null=True, help_text="When it was confirmed.")
    provider = serializers.CharField(
        allow_null=True,
        help_text="The sign-in provider (oidc, ldap) whose groups give it; null for a role "
        "granted here. Held while one is in one of those groups.",
    )
    groups = serializers.ListField(
        child=serializers.CharField(), help_text="The provider's groups that give it."
    )
    permissions = serializers.ListField(
        child=serializers.CharField(), help_text="What the role lets one do, in words."
    )

    class Meta:
        ref_name = "AccountRole"


class _AccountSerializer(serializers.Serializer):
    username = serializers.CharField()
    name = serializers.CharField(source="get_full_name")
    email = serializers.CharField(help_text="Where e-mail alerts go; empty for none.")
    roles = serializers.SerializerMethodField()

    class Meta:
        ref_name = "Account"

    @extend_schema_field(_RoleSerializer(many=True))
    def get_roles(self, user):
        return _RoleSerializer(account_roles(user), many=True).data


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


class AccountApi(ServiceRefusals, APIView):
    """The caller's own account; PATCH sets its e-mail address."""

    class InputSerializer(serializers.Serializer):
        email = serializers.CharField(
            max_length=EMAIL_MAX,
            allow_blank=True,
            help_text="The address e-mail alerts go to; empty removes it.",
        )

        class Meta:
            ref_name = "AccountUpdate"

    @extend_schema(
        operation_id="account_read",
        description="The caller's account: user name, name, e-mail address, and each role with "
        "where it came from and what it lets one do, in words.",
        responses={200: answer(_AccountSerializer, _ACCOUNT), **ERRORS},
    )
    def get(self, request):
        return Response(_AccountSerializer(request.user).data)

    @extend_schema(
        operation_id="account_update",
        description="Set the caller's e-mail address (audited as account.email_changed).",
        request=InputSerializer,
        examples=[sent({"email": "operator@example.com"})],
        responses={200: answer(_AccountSerializer, _ACCOUNT), 400: BAD_REQUEST, **ERRORS},
    )
    def patch(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        account_email_set(actor=request.user, email=data.validated_data["email"])
        return Response(_AccountSerializer(request.user).data)
