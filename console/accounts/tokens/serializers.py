"""The serializers of /api/v1/tokens (apis.py)."""

from rest_framework import serializers

from console.accounts.models import NAME_MAX
from console.accounts.tokens.selectors import DAYS_MAX


class TokenSerializer(serializers.Serializer):
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


class TokenCreatedSerializer(TokenSerializer):
    token = serializers.CharField(
        help_text="The token, for `Authorization: Token <token>`. Shown this once: it is stored "
        "only as a digest."
    )

    class Meta:
        ref_name = "ApiTokenCreated"


class TokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=NAME_MAX, help_text="What the token is for.")
    days = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=DAYS_MAX,
        help_text="How long it lasts; API_TOKEN_DAYS (90) by default.",
    )

    class Meta:
        ref_name = "ApiTokenCreate"


class OwnerQuerySerializer(serializers.Serializer):
    user = serializers.CharField(required=False, max_length=150)
