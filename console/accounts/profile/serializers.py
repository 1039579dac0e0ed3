"""The serializers of /api/v1/account (apis.py)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.accounts.profile.selectors import account_roles
from console.accounts.profile.services import EMAIL_MAX


class RoleSerializer(serializers.Serializer):
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


class AccountSerializer(serializers.Serializer):
    username = serializers.CharField()
    name = serializers.CharField(source="get_full_name")
    email = serializers.CharField(help_text="Where e-mail alerts go; empty for none.")
    roles = serializers.SerializerMethodField()

    class Meta:
        ref_name = "Account"

    @extend_schema_field(RoleSerializer(many=True))
    def get_roles(self, user):
        return RoleSerializer(account_roles(user), many=True).data


class AccountUpdateSerializer(serializers.Serializer):
    email = serializers.CharField(
        max_length=EMAIL_MAX,
        allow_blank=True,
        help_text="The address e-mail alerts go to; empty removes it.",
    )

    class Meta:
        ref_name = "AccountUpdate"
